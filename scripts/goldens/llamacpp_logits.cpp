// Goldens tooling only (not part of the build): llama.cpp's logits for given token ids, through
// its public C API (include/llama.h), as make_tiny_models.py's judge where llama-cpp-python is
// not installed. Built by that script against the static libraries of the llama.cpp build that
// ships with the llama-cpp-python 0.3.36 sdist (vendor/llama.cpp/build).
//
//   llamacpp_logits MODEL.gguf IDS.txt OUT.f32 CHUNK
//
// IDS.txt: whitespace-separated token ids. The ids are decoded in steps of CHUNK tokens (one
// sequence, F32 KV cache, flash attention off, 2 threads), every position an output; OUT.f32
// gets n_ids x n_vocab little-endian float32 logits, row p = after position p.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL.gguf IDS.txt OUT.f32 CHUNK\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> ids;
  {
    std::ifstream in(argv[2]);
    for (int v; in >> v;) ids.push_back(v);
  }
  const int chunk = std::atoi(argv[4]);
  if (ids.empty() || chunk < 1) return 2;
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 128;
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(chunk);
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::vector<float> out;
  llama_batch batch = llama_batch_init(chunk, 0, 1);
  for (size_t p0 = 0; p0 < ids.size(); p0 += static_cast<size_t>(chunk)) {
    batch.n_tokens = 0;
    for (size_t p = p0; p < ids.size() && p < p0 + static_cast<size_t>(chunk); ++p) {
      const int i = batch.n_tokens++;
      batch.token[i] = ids[p];
      batch.pos[i] = static_cast<llama_pos>(p);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    if (llama_decode(ctx, batch) != 0) return 1;
    for (int i = 0; i < batch.n_tokens; ++i) {
      const float* row = llama_get_logits_ith(ctx, i);
      out.insert(out.end(), row, row + n_vocab);
    }
  }
  llama_batch_free(batch);
  std::FILE* f = std::fopen(argv[3], "wb");
  if (f == nullptr || std::fwrite(out.data(), sizeof(float), out.size(), f) != out.size()) return 1;
  std::fclose(f);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
