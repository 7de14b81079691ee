#include "models/model_config.h"

#include <cmath>
#include <numbers>
#include <string>
#include <utility>

namespace geniex::models {

namespace {

using gguf::GgufFile;
using gguf::Value;
using gguf::ValueType;

constexpr std::string_view kSupported = "llama, qwen2, qwen3, gemma3, lfm2, gemma-embedding";
constexpr uint32_t kMaxConvTaps = 64;
constexpr uint32_t kGemma3DefaultSwaPeriod = 6;
constexpr uint32_t kGemma3_27bLayers = 62;  // llama.cpp picks the 27B attention scale by depth

std::string prefix(const GgufFile& f) { return "models: " + f.name() + ": "; }

Status bad_value(const GgufFile& f, std::string_view key, const std::string& what) {
  return invalid_argument(prefix(f) + "metadata key '" + std::string(key) + "' " + what);
}

Status check_range(const GgufFile& f, std::string_view key, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi)
    return bad_value(
        f, key,
        "is " + std::to_string(v) + ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
  return {};
}

/// A required unsigned key within [lo, hi].
Result<uint32_t> req_u32(const GgufFile& f, const std::string& key, uint64_t lo, uint64_t hi) {
  GENIEX_ASSIGN_OR_RETURN(const uint64_t v, f.get_uint(key));
  GENIEX_TRY(check_range(f, key, v, lo, hi));
  return static_cast<uint32_t>(v);
}

/// An optional unsigned key within [lo, hi]; `fallback` when absent (not range-checked).
Result<uint32_t> opt_u32(const GgufFile& f, const std::string& key, uint32_t fallback, uint64_t lo,
                         uint64_t hi) {
  if (!f.find(key)) return fallback;
  return req_u32(f, key, lo, hi);
}

/// A required finite float key; `positive` also rejects values <= 0.
Result<float> req_f32(const GgufFile& f, const std::string& key, bool positive) {
  GENIEX_ASSIGN_OR_RETURN(const double d, f.get_float(key));
  if (!std::isfinite(d) || (positive && d <= 0.0))
    return bad_value(
        f, key,
        "is " + std::to_string(d) + (positive ? ", expected a finite value > 0" : ", not finite"));
  return static_cast<float>(d);
}

Result<float> opt_f32(const GgufFile& f, const std::string& key, float fallback, bool positive) {
  if (!f.find(key)) return fallback;
  return req_f32(f, key, positive);
}

/// A per-layer count: an integer scalar (repeated) or an integer array of n_layer entries.
Result<std::vector<uint32_t>> per_layer(const GgufFile& f, const std::string& key, uint32_t n_layer,
                                        uint64_t lo, uint64_t hi) {
  const Value* v = f.find(key);
  if (v && v->is_array()) {
    GENIEX_ASSIGN_OR_RETURN(const std::vector<int64_t> a, f.get_int_array(key));
    if (a.size() != n_layer)
      return bad_value(f, key,
                       "has " + std::to_string(a.size()) + " entries, expected one per layer (" +
                           std::to_string(n_layer) + ")");
    std::vector<uint32_t> out(n_layer);
    for (uint32_t il = 0; il < n_layer; ++il) {
      if (a[il] < 0 || static_cast<uint64_t>(a[il]) < lo || static_cast<uint64_t>(a[il]) > hi)
        return bad_value(f, key,
                         "[" + std::to_string(il) + "] is " + std::to_string(a[il]) +
                             ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
      out[il] = static_cast<uint32_t>(a[il]);
    }
    return out;
  }
  GENIEX_ASSIGN_OR_RETURN(const uint32_t s, req_u32(f, key, lo, hi));
  return std::vector<uint32_t>(n_layer, s);
}

Result<Architecture> parse_arch(const GgufFile& f, const std::string& name) {
  if (name == "llama") return Architecture::kLlama;
  if (name == "qwen2") return Architecture::kQwen2;
  if (name == "qwen3") return Architecture::kQwen3;
  if (name == "gemma3") return Architecture::kGemma3;
  // EmbeddingGemma: gemma3 layers (attention made bidirectional by the embedding path).
  if (name == "gemma-embedding") return Architecture::kGemma3;
  if (name == "lfm2") return Architecture::kLfm2;
  return unimplemented(prefix(f) + "architecture '" + name +
                       "' is not supported (supported: " + std::string(kSupported) + ")");
}

Result<uint32_t> read_vocab(const GgufFile& f, const std::string& ak) {
  if (f.find(ak + "vocab_size")) return req_u32(f, ak + "vocab_size", 1, kMaxVocab);
  const Value* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens)
    return not_found(prefix(f) + "vocabulary size unknown: neither '" + ak +
                     "vocab_size' nor 'tokenizer.ggml.tokens' is present");
  if (!tokens->is_array() || tokens->elem_type() != ValueType::kString)
    return bad_value(f, "tokenizer.ggml.tokens", "is not an ARRAY of STRING");
  GENIEX_TRY(check_range(f, "tokenizer.ggml.tokens", tokens->array_size(), 1, kMaxVocab));
  return static_cast<uint32_t>(tokens->array_size());
}

Status read_rope(const GgufFile& f, const std::string& ak, ModelConfig& c) {
  RopeConfig& r = c.rope;
  r.mode = c.arch == Architecture::kLlama ? RopeMode::kNorm : RopeMode::kNeox;
  const std::string rot_key = ak + "rope.dimension_count";
  GENIEX_ASSIGN_OR_RETURN(r.n_rot, opt_u32(f, rot_key, c.head_dim_k, 2, c.head_dim_k));
  if (r.n_rot % 2 != 0) return bad_value(f, rot_key, "is odd (" + std::to_string(r.n_rot) + ")");
  if (c.arch == Architecture::kLlama && r.n_rot != c.head_dim_k)
    return bad_value(f, rot_key,
                     "is " + std::to_string(r.n_rot) +
                         " but llama requires it to equal the "
                         "head dimension " +
                         std::to_string(c.head_dim_k));
  GENIEX_ASSIGN_OR_RETURN(r.freq_base, opt_f32(f, ak + "rope.freq_base", 10000.0f, true));
  if (c.arch == Architecture::kGemma3) {
    GENIEX_ASSIGN_OR_RETURN(r.freq_base_swa, opt_f32(f, ak + "rope.freq_base_swa", 10000.0f, true));
  } else {
    r.freq_base_swa = r.freq_base;
  }

  // Factor: rope.scaling.factor, else the legacy rope.scale_linear, else 1.
  GENIEX_ASSIGN_OR_RETURN(const float legacy, opt_f32(f, ak + "rope.scale_linear", 1.0f, true));
  GENIEX_ASSIGN_OR_RETURN(r.scaling_factor, opt_f32(f, ak + "rope.scaling.factor", legacy, true));
  const std::string type_key = ak + "rope.scaling.type";
  if (f.find(type_key)) {
    GENIEX_ASSIGN_OR_RETURN(const std::string type, f.get_string(type_key));
    if (type == "none") {
      r.scaling = RopeScaling::kNone;
    } else if (type == "linear") {
      r.scaling = RopeScaling::kLinear;
    } else if (type == "yarn") {
      r.scaling = RopeScaling::kYarn;
    } else if (type == "llama3") {
      r.scaling = RopeScaling::kLlama3;
    } else {
      return unimplemented(prefix(f) + "metadata key '" + type_key + "' is '" + type +
                           "' (supported: none, linear, yarn, llama3)");
    }
  } else {
    // llama.cpp's default is "linear" with factor 1, i.e. no scaling.
    r.scaling = r.scaling_factor != 1.0f ? RopeScaling::kLinear : RopeScaling::kNone;
  }
  GENIEX_ASSIGN_OR_RETURN(
      r.original_context_length,
      opt_u32(f, ak + "rope.scaling.original_context_length", 0, 1, UINT32_MAX));
  GENIEX_ASSIGN_OR_RETURN(r.yarn_ext_factor,
                          opt_f32(f, ak + "rope.scaling.yarn_ext_factor", -1.0f, false));
  GENIEX_ASSIGN_OR_RETURN(const float attn_factor,
                          opt_f32(f, ak + "rope.scaling.attn_factor", 1.0f, true));
  GENIEX_ASSIGN_OR_RETURN(r.yarn_attn_factor,
                          opt_f32(f, ak + "rope.scaling.yarn_attn_factor", attn_factor, true));
  GENIEX_ASSIGN_OR_RETURN(r.yarn_beta_fast,
                          opt_f32(f, ak + "rope.scaling.yarn_beta_fast", 32.0f, false));
  GENIEX_ASSIGN_OR_RETURN(r.yarn_beta_slow,
                          opt_f32(f, ak + "rope.scaling.yarn_beta_slow", 1.0f, false));
  GENIEX_ASSIGN_OR_RETURN(r.low_freq_factor,
                          opt_f32(f, ak + "rope.scaling.low_freq_factor", 1.0f, true));
  GENIEX_ASSIGN_OR_RETURN(r.high_freq_factor,
                          opt_f32(f, ak + "rope.scaling.high_freq_factor", 4.0f, true));
  if (r.scaling == RopeScaling::kLlama3 && r.high_freq_factor <= r.low_freq_factor)
    return bad_value(f, ak + "rope.scaling.high_freq_factor", "must exceed low_freq_factor");

  // Llama 3.1+ stores its scaling as a tensor instead of keys (only the llama graph uses it).
  if (c.arch == Architecture::kLlama && f.find_tensor("rope_freqs.weight")) {
    r.has_freq_factors = true;
    if (r.scaling == RopeScaling::kNone) r.scaling = RopeScaling::kLlama3;
  }
  return {};
}

Status read_sliding(const GgufFile& f, const std::string& ak, ModelConfig& c) {
  c.is_sliding.assign(c.n_layer, false);
  if (c.arch != Architecture::kGemma3) return {};  // HF sliding fields are not applied
  GENIEX_ASSIGN_OR_RETURN(c.sliding_window,
                          opt_u32(f, ak + "attention.sliding_window", 0, 0, kMaxContextLength));
  if (c.sliding_window == 0) return {};
  const std::string key = ak + "attention.sliding_window_pattern";
  const Value* v = f.find(key);
  if (v && v->is_array()) {
    if (v->elem_type() != ValueType::kBool) return bad_value(f, key, "is not an ARRAY of BOOL");
    const auto& flags = std::get<std::vector<bool>>(v->storage());
    if (flags.size() != c.n_layer)
      return bad_value(f, key,
                       "has " + std::to_string(flags.size()) +
                           " entries, expected one per layer (" + std::to_string(c.n_layer) + ")");
    c.is_sliding = flags;
    return {};
  }
  GENIEX_ASSIGN_OR_RETURN(const uint32_t period,
                          opt_u32(f, key, kGemma3DefaultSwaPeriod, 1, kMaxLayers));
  for (uint32_t il = 0; il < c.n_layer; ++il) c.is_sliding[il] = il % period < period - 1;
  return {};
}

// LFM2 (spec LFM2.md §1.1): the conv width, QK norm, and the FFN width of each layer from its
// ffn_gate tensor (the converter writes feed_forward_length twice; the tensor is the truth).
Status read_lfm2(const GgufFile& f, const std::string& ak, ModelConfig& c) {
  GENIEX_ASSIGN_OR_RETURN(c.conv_taps, req_u32(f, ak + "shortconv.l_cache", 2, kMaxConvTaps));
  c.has_qk_norm = true;
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const gguf::TensorInfo* g = f.find_tensor("blk." + std::to_string(il) + ".ffn_gate.weight");
    if (g != nullptr && g->ne[1] >= 1 && g->ne[1] <= kMaxFf) {
      c.n_ff[il] = static_cast<uint32_t>(g->ne[1]);
    }
  }
  bool any_attention = false;
  for (uint32_t il = 0; il < c.n_layer; ++il) any_attention |= c.n_head_kv[il] != 0;
  if (!any_attention) {
    return unimplemented(prefix(f) + "lfm2 without attention layers is not supported");
  }
  return {};
}

}  // namespace

std::string_view architecture_name(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama: return "llama";
    case Architecture::kQwen2: return "qwen2";
    case Architecture::kQwen3: return "qwen3";
    case Architecture::kGemma3: return "gemma3";
    case Architecture::kLfm2: return "lfm2";
  }
  return "?";
}

std::string_view supported_architectures() { return kSupported; }

std::string_view rope_scaling_name(RopeScaling s) {
  switch (s) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kYarn: return "yarn";
    case RopeScaling::kLlama3: return "llama3";
  }
  return "?";
}

float RopeConfig::freq_scale() const {
  if (scaling == RopeScaling::kLinear || scaling == RopeScaling::kYarn)
    return 1.0f / scaling_factor;
  return 1.0f;
}

float ModelConfig::rope_base_at(uint32_t il) const {
  return is_sliding[il] ? rope.freq_base_swa : rope.freq_base;
}

float ModelConfig::rope_freq_scale_at(uint32_t il) const {
  return is_sliding[il] ? 1.0f : rope.freq_scale();
}

Result<ModelConfig> load_config(const gguf::GgufFile& f) {
  ModelConfig c;
  GENIEX_ASSIGN_OR_RETURN(c.arch_name, f.get_string("general.architecture"));
  GENIEX_ASSIGN_OR_RETURN(c.arch, parse_arch(f, c.arch_name));
  if (f.find("general.name")) {
    GENIEX_ASSIGN_OR_RETURN(c.name, f.get_string("general.name"));
  }
  const std::string ak = c.arch_name + ".";

  GENIEX_ASSIGN_OR_RETURN(c.n_layer, req_u32(f, ak + "block_count", 1, kMaxLayers));
  GENIEX_ASSIGN_OR_RETURN(c.n_embd, req_u32(f, ak + "embedding_length", 1, kMaxEmbd));
  GENIEX_ASSIGN_OR_RETURN(c.context_length,
                          req_u32(f, ak + "context_length", 1, kMaxContextLength));
  GENIEX_ASSIGN_OR_RETURN(c.n_vocab, read_vocab(f, ak));
  GENIEX_ASSIGN_OR_RETURN(c.n_ff, per_layer(f, ak + "feed_forward_length", c.n_layer, 1, kMaxFf));

  const std::string head_key = ak + "attention.head_count";
  GENIEX_ASSIGN_OR_RETURN(const std::vector<uint32_t> heads,
                          per_layer(f, head_key, c.n_layer, 1, kMaxHeads));
  for (const uint32_t h : heads)
    if (h != heads[0])
      return unimplemented(prefix(f) + "metadata key '" + head_key +
                           "' varies per layer, which these architectures do not use");
  c.n_head = heads[0];
  const std::string kv_key = ak + "attention.head_count_kv";
  const bool lfm2 = c.arch == Architecture::kLfm2;
  if (f.find(kv_key)) {
    // lfm2: 0 marks a short-conv layer (llama.cpp's is_recurrent(il)).
    GENIEX_ASSIGN_OR_RETURN(c.n_head_kv, per_layer(f, kv_key, c.n_layer, lfm2 ? 0 : 1, kMaxHeads));
  } else if (lfm2) {
    return not_found(prefix(f) + "metadata key '" + kv_key +
                     "' is missing (lfm2 marks its conv layers there)");
  } else {
    c.n_head_kv.assign(c.n_layer, c.n_head);  // llama.cpp: defaults to n_head
  }
  for (uint32_t il = 0; il < c.n_layer; ++il)
    if (c.n_head_kv[il] != 0 && c.n_head % c.n_head_kv[il] != 0)
      return bad_value(f, kv_key,
                       "is " + std::to_string(c.n_head_kv[il]) + " at layer " + std::to_string(il) +
                           ", which does not divide head_count " + std::to_string(c.n_head));

  const std::string kl_key = ak + "attention.key_length";
  const std::string vl_key = ak + "attention.value_length";
  if (!f.find(kl_key) || !f.find(vl_key)) {
    if (c.n_embd % c.n_head != 0)
      return bad_value(f, head_key,
                       "is " + std::to_string(c.n_head) + ", which does not divide " + ak +
                           "embedding_length " + std::to_string(c.n_embd) +
                           " (needed when the key/value lengths are not stored)");
  }
  const uint32_t default_head_dim = c.n_embd / c.n_head;
  GENIEX_ASSIGN_OR_RETURN(c.head_dim_k, opt_u32(f, kl_key, default_head_dim, 1, kMaxHeadDim));
  GENIEX_ASSIGN_OR_RETURN(c.head_dim_v, opt_u32(f, vl_key, default_head_dim, 1, kMaxHeadDim));
  if (c.head_dim_k == 0 || c.head_dim_k > kMaxHeadDim)
    return bad_value(f, kl_key, "gives a head dimension of " + std::to_string(c.head_dim_k));

  const std::string eps_key = ak + "attention.layer_norm_rms_epsilon";
  GENIEX_ASSIGN_OR_RETURN(c.rms_eps, req_f32(f, eps_key, true));
  if (c.rms_eps >= 1.0f) return bad_value(f, eps_key, "is >= 1");

  GENIEX_TRY(read_rope(f, ak, c));
  GENIEX_TRY(read_sliding(f, ak, c));

  // Attention scale: an explicit override key, else llama.cpp's rule.
  const float default_scale = (c.arch == Architecture::kGemma3 && c.n_layer == kGemma3_27bLayers)
                                  ? 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head))
                                  : 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  GENIEX_ASSIGN_OR_RETURN(c.attn_scale, opt_f32(f, ak + "attention.scale", default_scale, true));
  GENIEX_ASSIGN_OR_RETURN(c.final_logit_softcap,
                          opt_f32(f, ak + "final_logit_softcapping", 0.0f, false));
  GENIEX_ASSIGN_OR_RETURN(c.attn_logit_softcap,
                          opt_f32(f, ak + "attn_logit_softcapping", 0.0f, false));
  if (c.final_logit_softcap < 0.0f)
    return bad_value(f, ak + "final_logit_softcapping", "is negative");
  if (c.attn_logit_softcap < 0.0f)
    return bad_value(f, ak + "attn_logit_softcapping", "is negative");

  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  switch (c.arch) {
    case Architecture::kLlama:
      c.has_qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
      break;
    case Architecture::kQwen2: c.has_qkv_bias = true; break;
    case Architecture::kQwen3: c.has_qk_norm = true; break;
    case Architecture::kLfm2: GENIEX_TRY(read_lfm2(f, ak, c)); break;
    case Architecture::kGemma3:
      c.has_qk_norm = true;
      c.has_post_norms = true;
      c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
      c.ffn_act = FfnActivation::kGeluTanh;
      break;
  }
  return c;
}

std::vector<float> llama3_freq_factors(float freq_base, uint32_t n_rot, float factor,
                                       float low_freq_factor, float high_freq_factor,
                                       uint32_t original_context_length) {
  std::vector<float> ff(n_rot / 2);
  const double orig = original_context_length;
  const double lo_wl = orig / low_freq_factor;
  const double hi_wl = orig / high_freq_factor;
  for (uint32_t i = 0; i < n_rot / 2; ++i) {
    const double freq = std::pow(static_cast<double>(freq_base), -2.0 * i / n_rot);
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double v = 1.0;
    if (wavelen < hi_wl) {
      v = 1.0;
    } else if (wavelen > lo_wl) {
      v = factor;
    } else {
      const double smooth =
          (orig / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      v = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    ff[i] = static_cast<float>(v);
  }
  return ff;
}

}  // namespace geniex::models
