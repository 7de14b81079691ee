// Goldens tooling only (not part of the build): llama.cpp + libmtmd as a second judge of the tiny
// LFM2-VL goldens (make_tiny_lfm2vl.py --llama-cpp-judge). Built by that script against the
// static libraries of the llama-cpp-python 0.3.36 sdist's vendor/llama.cpp/build (target mtmd).
//
//   llamacpp_mtmd_lfm2vl TEXT.gguf MMPROJ.gguf IMAGE.rgb W H PROMPT.txt OUT_PREFIX
//
// IMAGE.rgb: W*H*3 bytes RGB. PROMPT.txt: the prompt with mtmd's default media marker where the
// image goes (parse_special, no add_special). mtmd tokenizes it (text chunks + one image chunk
// wrapped in <|image_start|>/<|image_end|>), encodes the image (2 threads, CPU), decodes the text
// chunks with logits for every token and the image chunk with mtmd_helper_decode_image_chunk
// (F32 KV cache, flash attention off). Writes
//   OUT_PREFIX.ids        one line per position: token id, or -1 for an image-embedding position
//   OUT_PREFIX.embd.f32   the image chunk's embeddings, n_image_tokens x n_embd float32
//   OUT_PREFIX.logits.f32 logits of every text position (in order), n_text x n_vocab float32
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

static bool write_f32(const std::string& path, const std::vector<float>& v) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(v.data(), sizeof(float), v.size(), f) == v.size();
  std::fclose(f);
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s TEXT.gguf MMPROJ.gguf IMAGE.rgb W H PROMPT.txt OUT_PREFIX\n",
                 argv[0]);
    return 2;
  }
  const int w = std::atoi(argv[4]), h = std::atoi(argv[5]);
  std::vector<unsigned char> rgb(static_cast<size_t>(w) * h * 3);
  {
    std::ifstream in(argv[3], std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(rgb.data()), static_cast<std::streamsize>(rgb.size())))
      return 2;
  }
  std::string prompt;
  {
    std::ifstream in(argv[6], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    prompt = ss.str();
  }
  const std::string prefix = argv[7];

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 4096;
  cp.n_batch = cp.n_ubatch = 512;
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* lctx = llama_init_from_model(model, cp);
  if (lctx == nullptr) return 1;

  mtmd_context_params mparams = mtmd_context_params_default();
  mparams.use_gpu = false;
  mparams.n_threads = 2;
  mparams.warmup = false;
  mparams.print_timings = false;
  mparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  mtmd_context* mctx = mtmd_init_from_file(argv[2], model, mparams);
  if (mctx == nullptr) return 1;

  mtmd_bitmap* bmp =
      mtmd_bitmap_init(static_cast<uint32_t>(w), static_cast<uint32_t>(h), rgb.data());
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  mtmd_input_text text{prompt.c_str(), prompt.size(), /*add_special=*/false,
                       /*parse_special=*/true};
  const mtmd_bitmap* bitmaps[1] = {bmp};
  if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0) return 1;

  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::vector<int> pos_ids;
  std::vector<float> embd_all, logits;
  llama_pos n_past = 0;
  llama_batch batch = llama_batch_init(512, 0, 1);
  for (size_t c = 0; c < mtmd_input_chunks_size(chunks); ++c) {
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, c);
    if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* toks = mtmd_input_chunk_get_tokens_text(chunk, &n);
      for (size_t p0 = 0; p0 < n; p0 += 512) {
        batch.n_tokens = 0;
        for (size_t p = p0; p < n && p < p0 + 512; ++p) {
          const int i = batch.n_tokens++;
          batch.token[i] = toks[p];
          batch.pos[i] = n_past + static_cast<llama_pos>(p);
          batch.n_seq_id[i] = 1;
          batch.seq_id[i][0] = 0;
          batch.logits[i] = 1;
          pos_ids.push_back(toks[p]);
        }
        if (llama_decode(lctx, batch) != 0) return 1;
        for (int i = 0; i < batch.n_tokens; ++i) {
          const float* row = llama_get_logits_ith(lctx, i);
          logits.insert(logits.end(), row, row + n_vocab);
        }
      }
      n_past += static_cast<llama_pos>(n);
    } else {
      if (mtmd_encode_chunk(mctx, chunk) != 0) return 1;
      const size_t n_tok = mtmd_input_chunk_get_n_tokens(chunk);
      const int n_embd = llama_model_n_embd_inp(model);
      float* embd = mtmd_get_output_embd(mctx);
      embd_all.insert(embd_all.end(), embd, embd + n_tok * static_cast<size_t>(n_embd));
      llama_pos new_n_past = 0;
      if (mtmd_helper_decode_image_chunk(mctx, lctx, chunk, embd, n_past, 0, 512, &new_n_past,
                                         nullptr, nullptr) != 0)
        return 1;
      for (size_t i = 0; i < n_tok; ++i) pos_ids.push_back(-1);
      n_past = new_n_past;
    }
  }
  llama_batch_free(batch);
  {
    std::ofstream out(prefix + ".ids");
    for (int id : pos_ids) out << id << "\n";
  }
  if (!write_f32(prefix + ".embd.f32", embd_all) || !write_f32(prefix + ".logits.f32", logits))
    return 1;
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bmp);
  mtmd_free(mctx);
  llama_free(lctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
