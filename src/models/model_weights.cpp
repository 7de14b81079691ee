#include "models/model_weights.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "models/tensor_binder.h"

namespace geniex::models {

namespace {

using gguf::GgufFile;

void bind_ffn(Binder& b, LayerWeights& l, const std::string& p, uint64_t n_embd, uint64_t ff) {
  l.ffn_norm = b.bind(p + "ffn_norm.weight", {n_embd});
  l.ffn_gate = b.bind(p + "ffn_gate.weight", {n_embd, ff});
  l.ffn_up = b.bind(p + "ffn_up.weight", {n_embd, ff});
  l.ffn_down = b.bind(p + "ffn_down.weight", {ff, n_embd});
}

}  // namespace

Result<ModelWeights> bind_weights(const gguf::GgufFile& file, const ModelConfig& c) {
  if (c.n_head_kv.size() != c.n_layer || c.n_ff.size() != c.n_layer ||
      c.is_sliding.size() != c.n_layer)
    return invalid_argument("models: " + file.name() +
                            ": config per-layer arrays do not match n_layer (not from "
                            "load_config?)");
  Binder b(file);
  ModelWeights w;
  const uint64_t n_embd = c.n_embd;
  const bool llama = c.arch == Architecture::kLlama;

  w.tok_embd = b.bind("token_embd.weight", {n_embd, c.n_vocab});
  // lfm2 calls its final norm token_embd_norm (llama.cpp LLM_TENSOR_OUTPUT_NORM_LFM2).
  w.output_norm = b.bind(
      c.arch == Architecture::kLfm2 ? "token_embd_norm.weight" : "output_norm.weight", {n_embd});
  w.output = b.bind("output.weight", {n_embd, c.n_vocab}, /*required=*/!c.tied_embeddings);
  w.tied_embeddings = w.output == nullptr;
  if (w.tied_embeddings) w.output = w.tok_embd;
  if (c.arch == Architecture::kQwen2) w.output_b = b.bind("output.bias", {c.n_vocab}, false);
  if (c.rope.has_freq_factors) w.rope_freqs = b.bind("rope_freqs.weight", {c.rope.n_rot / 2});

  w.layers.resize(c.n_layer);
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    LayerWeights& l = w.layers[il];
    const std::string p = "blk." + std::to_string(il) + ".";
    const uint64_t q = c.n_embd_q();
    const uint64_t k = c.n_embd_k_gqa(il);
    const uint64_t v = c.n_embd_v_gqa(il);
    const uint64_t o = static_cast<uint64_t>(c.n_head) * c.head_dim_v;
    const uint64_t ff = c.n_ff[il];

    l.attn_norm = b.bind(p + "attn_norm.weight", {n_embd});
    if (c.layer_is_conv(il)) {
      l.conv_in_proj = b.bind(p + "shortconv.in_proj.weight", {n_embd, 3 * n_embd});
      l.conv_kernel = b.bind(p + "shortconv.conv.weight", {c.conv_taps, n_embd});
      l.conv_out_proj = b.bind(p + "shortconv.out_proj.weight", {n_embd, n_embd});
      if (l.conv_kernel != nullptr && l.conv_kernel->type != GgmlType::kF32) {
        b.problem(p + "shortconv.conv.weight: expected type F32, found " +
                  std::string(ggml_type_name(l.conv_kernel->type)));
      }
      bind_ffn(b, l, p, n_embd, c.n_ff[il]);
      continue;
    }
    l.attn_q = b.bind(p + "attn_q.weight", {n_embd, q});
    l.attn_k = b.bind(p + "attn_k.weight", {n_embd, k});
    l.attn_v = b.bind(p + "attn_v.weight", {n_embd, v});
    l.attn_output = b.bind(p + "attn_output.weight", {o, n_embd});
    if (c.has_qkv_bias) {
      l.attn_q_b = b.bind(p + "attn_q.bias", {q});
      l.attn_k_b = b.bind(p + "attn_k.bias", {k});
      l.attn_v_b = b.bind(p + "attn_v.bias", {v});
    }
    if (c.has_qk_norm) {
      l.attn_q_norm = b.bind(p + "attn_q_norm.weight", {c.head_dim_k});
      l.attn_k_norm = b.bind(p + "attn_k_norm.weight", {c.head_dim_k});
    }
    if (c.has_post_norms) {
      l.post_attention_norm = b.bind(p + "post_attention_norm.weight", {n_embd});
      l.post_ffw_norm = b.bind(p + "post_ffw_norm.weight", {n_embd});
    }
    bind_ffn(b, l, p, n_embd, ff);
    if (llama) {  // llama.cpp accepts these optional biases for the llama graph
      l.attn_output_b = b.bind(p + "attn_output.bias", {n_embd}, false);
      l.ffn_gate_b = b.bind(p + "ffn_gate.bias", {ff}, false);
      l.ffn_up_b = b.bind(p + "ffn_up.bias", {ff}, false);
      l.ffn_down_b = b.bind(p + "ffn_down.bias", {n_embd}, false);
    }
    l.rope_freqs = w.rope_freqs;
  }
  GENIEX_TRY(b.status());
  w.n_bound = b.n_bound();
  w.n_unused = file.tensors().size() - w.n_bound;
  return w;
}

}  // namespace geniex::models
