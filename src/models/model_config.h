// Architecture hyper-parameters read from a GGUF file's metadata (llama, qwen2, qwen3, gemma3,
// lfm2).
// Everything a forward graph needs to know that is not a tensor lives in ModelConfig; the
// values follow llama.cpp's interpretation of the keys (see shared/spec/ARCH.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"

namespace geniex::models {

/// The text architectures this build understands (`general.architecture`).
enum class Architecture { kLlama, kQwen2, kQwen3, kGemma3, kLfm2 };

/// "llama", "qwen2", "qwen3", "gemma3", "lfm2".
std::string_view architecture_name(Architecture arch);
/// The comma-separated list of supported `general.architecture` values.
std::string_view supported_architectures();

/// How RoPE pairs the elements of a head.
enum class RopeMode {
  kNorm,  ///< adjacent pairs (x[2i], x[2i+1]) — `llama` (weights permuted by the converter)
  kNeox,  ///< split halves (x[i], x[i + n_rot/2]) — qwen2, qwen3, gemma3
};

/// Context-extension scheme applied to the global rope.
enum class RopeScaling {
  kNone,
  kLinear,  ///< positions multiplied by 1/factor
  kYarn,    ///< YaRN; factor, original_context_length and the yarn_* fields apply
  kLlama3,  ///< per-frequency divisors (rope_freqs tensor, or computed from the fields)
};
std::string_view rope_scaling_name(RopeScaling s);

/// Gated-FFN activation.
enum class FfnActivation { kSilu, kGeluTanh };

struct RopeConfig {
  RopeMode mode = RopeMode::kNorm;
  uint32_t n_rot = 0;              ///< rotated dims per head (<= head_dim_k, even)
  float freq_base = 10000.0f;      ///< theta of global (full-attention) layers
  float freq_base_swa = 10000.0f;  ///< theta of sliding-window layers (gemma3)
  RopeScaling scaling = RopeScaling::kNone;
  /// rope.scaling.factor (1 when absent). For kLlama3 read from a tensor it stays 1: the
  /// divisors are in rope_freqs.weight.
  float scaling_factor = 1.0f;
  uint32_t original_context_length = 0;  ///< rope.scaling.original_context_length, 0 if absent
  // YaRN extras (llama.cpp defaults when absent).
  float yarn_ext_factor = -1.0f;  ///< < 0: derive from the factor, as llama.cpp does
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  // llama3 extras, only meaningful for kLlama3 given by keys (no tensor).
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  /// rope_freqs.weight exists: divide the angle of pair i by rope_freqs[i] on every layer.
  bool has_freq_factors = false;

  /// Position multiplier of global layers: 1/factor for linear and YaRN, else 1.
  [[nodiscard]] float freq_scale() const;
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  std::string arch_name;  ///< the `general.architecture` string
  std::string name;       ///< `general.name`, empty when absent

  uint32_t n_vocab = 0;  ///< `<arch>.vocab_size`, else the length of tokenizer.ggml.tokens
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  std::vector<uint32_t> n_head_kv;  ///< per layer (a scalar key is repeated)
  uint32_t head_dim_k = 0;          ///< attention.key_length, default n_embd / n_head
  uint32_t head_dim_v = 0;          ///< attention.value_length, default n_embd / n_head
  std::vector<uint32_t> n_ff;       ///< per layer
  uint32_t context_length = 0;      ///< n_ctx_train
  float rms_eps = 0.0f;

  RopeConfig rope;

  uint32_t sliding_window = 0;   ///< 0: no sliding-window layers
  std::vector<bool> is_sliding;  ///< per layer; all false without a window
  float attn_scale = 0.0f;       ///< multiply Q·Kᵀ by this (default 1/sqrt(head_dim_k))
  float embd_scale = 1.0f;       ///< token embeddings are multiplied by this (gemma3: √n_embd)
  float final_logit_softcap = 0.0f;  ///< 0: none; else logits = c·tanh(logits/c)
  float attn_logit_softcap = 0.0f;   ///< 0: none
  FfnActivation ffn_act = FfnActivation::kSilu;

  bool tied_embeddings = false;  ///< output.weight absent: reuse token_embd.weight
  bool has_qk_norm = false;      ///< per-head attn_q_norm / attn_k_norm (qwen3, gemma3)
  bool has_post_norms = false;   ///< post_attention_norm / post_ffw_norm (gemma3)
  bool has_qkv_bias = false;     ///< attn_q/k/v biases (qwen2 always; llama if present)
  /// lfm2: taps L of the short convolution (`shortconv.l_cache`); 0 for other architectures.
  /// Layers with head_count_kv 0 are short-conv layers, the others attention layers.
  uint32_t conv_taps = 0;

  [[nodiscard]] uint32_t n_head_kv_at(uint32_t il) const { return n_head_kv[il]; }
  /// Whether layer il is an LFM2 short-conv layer (no attention, no KV; a recurrent state).
  [[nodiscard]] bool layer_is_conv(uint32_t il) const {
    return conv_taps > 0 && n_head_kv[il] == 0;
  }
  /// Bytes of layer il's per-sequence recurrent state (F32 [n_embd, conv_taps - 1]); 0 for
  /// attention layers.
  [[nodiscard]] int64_t layer_state_bytes(uint32_t il) const {
    return layer_is_conv(il) ? int64_t{4} * n_embd * (conv_taps - 1) : 0;
  }
  /// Whether any layer carries a recurrent state (hybrid models).
  [[nodiscard]] bool has_recurrent_state() const {
    for (uint32_t il = 0; il < n_layer; ++il) {
      if (layer_is_conv(il)) return true;
    }
    return false;
  }
  [[nodiscard]] uint32_t n_ff_at(uint32_t il) const { return n_ff[il]; }
  /// Width of the Q projection output (n_head * head_dim_k).
  [[nodiscard]] uint32_t n_embd_q() const { return n_head * head_dim_k; }
  [[nodiscard]] uint32_t n_embd_k_gqa(uint32_t il) const { return n_head_kv[il] * head_dim_k; }
  [[nodiscard]] uint32_t n_embd_v_gqa(uint32_t il) const { return n_head_kv[il] * head_dim_v; }
  /// Whether layer il uses sliding-window attention (window `sliding_window`).
  [[nodiscard]] bool layer_is_sliding(uint32_t il) const { return is_sliding[il]; }
  /// RoPE theta of layer il (freq_base_swa on sliding layers).
  [[nodiscard]] float rope_base_at(uint32_t il) const;
  /// RoPE position multiplier of layer il (1 on sliding layers, rope.freq_scale() otherwise).
  [[nodiscard]] float rope_freq_scale_at(uint32_t il) const;
};

/// Limits applied by load_config (anything larger is rejected as nonsense).
inline constexpr uint32_t kMaxLayers = 4096;
inline constexpr uint32_t kMaxEmbd = 1u << 17;
inline constexpr uint32_t kMaxHeads = 1u << 12;
inline constexpr uint32_t kMaxHeadDim = 1u << 12;
inline constexpr uint32_t kMaxVocab = 1u << 24;
inline constexpr uint32_t kMaxFf = 1u << 20;
/// Token positions are int32 everywhere below (KV cells, RoPE positions, the public n_ctx):
/// context_length and sliding_window beyond 2^31 - 1 would wrap when narrowed.
inline constexpr uint32_t kMaxContextLength = 0x7FFFFFFFu;

/// Reads and validates the hyper-parameters. Unknown architecture → kUnimplemented; missing
/// or wrong-typed keys → the error names the key; nonsense values → kInvalidArgument.
Result<ModelConfig> load_config(const gguf::GgufFile& file);

/// The llama3 per-frequency divisors (n_rot/2 values) that the converter stores in
/// rope_freqs.weight, computed from factor / low / high / original context (HF recipe).
std::vector<float> llama3_freq_factors(float freq_base, uint32_t n_rot, float factor,
                                       float low_freq_factor, float high_freq_factor,
                                       uint32_t original_context_length);

}  // namespace geniex::models
