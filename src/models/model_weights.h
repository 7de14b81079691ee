// Binds the weight tensors of a model described by a ModelConfig: every required tensor is
// looked up by its GGUF name and its shape checked; nothing is copied or dequantized.
#pragma once

#include <cstddef>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "models/model_config.h"
#include "models/tensor_binder.h"

namespace geniex::models {

using gguf::TensorInfo;

/// The tensors of one block. Shapes are GGUF `ne` (ne[0] = input dim); optional ones are
/// nullptr when the architecture or the file has none. All 1-D tensors are F32.
struct LayerWeights {
  const TensorInfo* attn_norm = nullptr;            ///< [n_embd]
  const TensorInfo* attn_q = nullptr;               ///< [n_embd, n_head*head_dim_k]
  const TensorInfo* attn_k = nullptr;               ///< [n_embd, n_head_kv*head_dim_k]
  const TensorInfo* attn_v = nullptr;               ///< [n_embd, n_head_kv*head_dim_v]
  const TensorInfo* attn_output = nullptr;          ///< [n_head*head_dim_v, n_embd]
  const TensorInfo* attn_q_b = nullptr;             ///< [n_head*head_dim_k] (qwen2; llama optional)
  const TensorInfo* attn_k_b = nullptr;             ///< [n_head_kv*head_dim_k]
  const TensorInfo* attn_v_b = nullptr;             ///< [n_head_kv*head_dim_v]
  const TensorInfo* attn_output_b = nullptr;        ///< [n_embd] (llama optional)
  const TensorInfo* attn_q_norm = nullptr;          ///< [head_dim_k] (qwen3, gemma3, lfm2)
  const TensorInfo* attn_k_norm = nullptr;          ///< [head_dim_k] (qwen3, gemma3, lfm2)
  const TensorInfo* post_attention_norm = nullptr;  ///< [n_embd] (gemma3)
  const TensorInfo* ffn_norm = nullptr;             ///< [n_embd]
  const TensorInfo* ffn_gate = nullptr;             ///< [n_embd, n_ff]
  const TensorInfo* ffn_up = nullptr;               ///< [n_embd, n_ff]
  const TensorInfo* ffn_down = nullptr;             ///< [n_ff, n_embd]
  const TensorInfo* ffn_gate_b = nullptr;           ///< [n_ff] (llama optional)
  const TensorInfo* ffn_up_b = nullptr;             ///< [n_ff] (llama optional)
  const TensorInfo* ffn_down_b = nullptr;           ///< [n_embd] (llama optional)
  const TensorInfo* post_ffw_norm = nullptr;        ///< [n_embd] (gemma3)
  // lfm2 short-conv layers (instead of attn_q ... attn_output, which stay nullptr there):
  const TensorInfo* conv_in_proj = nullptr;   ///< [n_embd, 3 n_embd]: B, C, x in that order
  const TensorInfo* conv_kernel = nullptr;    ///< [conv_taps, n_embd] F32 (depthwise taps)
  const TensorInfo* conv_out_proj = nullptr;  ///< [n_embd, n_embd]
  /// The model's rope_freqs (shared by every layer), nullptr without one.
  const TensorInfo* rope_freqs = nullptr;
};

/// All tensors of the model; pointers stay valid while the GgufFile lives.
struct ModelWeights {
  const TensorInfo* tok_embd = nullptr;     ///< [n_embd, n_vocab]
  const TensorInfo* output_norm = nullptr;  ///< [n_embd]
  /// [n_embd, n_vocab]; equals tok_embd when the embeddings are tied.
  const TensorInfo* output = nullptr;
  const TensorInfo* output_b = nullptr;    ///< [n_vocab] (qwen2 optional)
  const TensorInfo* rope_freqs = nullptr;  ///< [n_rot/2] F32 (llama3 scaling), or nullptr
  bool tied_embeddings = false;
  std::vector<LayerWeights> layers;
  size_t n_bound = 0;   ///< distinct file tensors bound
  size_t n_unused = 0;  ///< file tensors this architecture does not use
};

/// Looks up and checks every tensor `config` implies. Missing required tensors → kNotFound
/// listing them (first kMaxListedTensors, then a count); wrong shapes or a non-F32 1-D
/// tensor → kInvalidArgument naming expected vs found. Extra tensors are ignored (counted).
Result<ModelWeights> bind_weights(const gguf::GgufFile& file, const ModelConfig& config);

}  // namespace geniex::models
