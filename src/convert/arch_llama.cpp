// llama (Llama 1-3, Mistral): llama.cpp's LlamaModel rules. Q and K projection rows are
// permuted from Hugging Face's rotate-half RoPE layout to GGML's interleaved pairs, and a
// Llama 3 RoPE scaling becomes a generated rope_freqs tensor.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>

#include "convert/arch.h"
#include "convert/tensor_names.h"

namespace geniex::convert {
namespace {

using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

// Rows [h][j][i] -> [h][i][j] with j in {0,1}, i < rows/heads/2: per head, the first and second
// halves are interleaved (LlamaModel.permute: reshape(heads, 2, half, ...).swapaxes(1, 2)).
Status permute_rows(ConvTensor& t, uint64_t n_head) {
  const uint64_t rows = t.shape.empty() ? 0 : t.shape[0];
  if (n_head == 0 || rows % (2 * n_head) != 0) {
    return invalid_argument("tensor " + t.name + ": " + std::to_string(rows) +
                            " rows do not split into " + std::to_string(n_head) +
                            " heads of pairs");
  }
  const uint64_t cols = rows == 0 ? 0 : t.values.size() / rows;
  const uint64_t half = rows / n_head / 2;
  std::vector<float> out(t.values.size());
  for (uint64_t h = 0; h < n_head; ++h) {
    for (uint64_t j = 0; j < 2; ++j) {
      for (uint64_t i = 0; i < half; ++i) {
        const uint64_t src = (h * 2 + j) * half + i;
        const uint64_t dst = (h * half + i) * 2 + j;
        std::copy_n(t.values.begin() + static_cast<std::ptrdiff_t>(src * cols), cols,
                    out.begin() + static_cast<std::ptrdiff_t>(dst * cols));
      }
    }
  }
  t.values = std::move(out);
  return {};
}

double number_or(const json& obj, const char* key, double fallback) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<double>() : fallback;
}

class LlamaConverter : public ArchConverter {
 public:
  LlamaConverter(const HfConfig& cfg, uint64_t n_head, uint64_t n_head_kv, uint64_t n_block,
                 uint64_t head_dim)
      : cfg_(cfg), n_head_(n_head), n_head_kv_(n_head_kv), n_block_(n_block), head_dim_(head_dim) {}

  std::string gguf_arch() const override { return "llama"; }

  Status add_params(const HfConfig& cfg, gguf::GgufWriter& w) const override {
    GENIEX_ASSIGN_OR_RETURN(uint64_t vocab, cfg.require_uint({"vocab_size"}));
    w.set("llama.vocab_size", Value::of_uint(ValueType::kUint32, vocab));
    w.set("llama.rope.dimension_count", Value::of_uint(ValueType::kUint32, head_dim_));
    return {};
  }

  Result<std::optional<std::string>> map_name(std::string_view hf_name) const override {
    return map_decoder_tensor_name(hf_name, n_block_);
  }

  Status transform(std::string_view hf_name, ConvTensor& t) const override {
    if (hf_name.ends_with("q_proj.weight") || hf_name.ends_with("q_proj.bias")) {
      return permute_rows(t, n_head_);
    }
    if (hf_name.ends_with("k_proj.weight") || hf_name.ends_with("k_proj.bias")) {
      return permute_rows(t, n_head_kv_);
    }
    return {};
  }

  // Llama 3 RoPE: per-frequency divisors, computed in float32 as the reference does.
  Result<std::vector<ConvTensor>> extra_tensors() const override {
    const json& rp = cfg_.full_attention_rope();
    const auto type = rp.find("rope_type");
    if (type == rp.end() || !type->is_string()) return std::vector<ConvTensor>{};
    std::string t = type->get<std::string>();
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t != "llama3") return std::vector<ConvTensor>{};
    const auto base = static_cast<float>(number_or(rp, "rope_theta", 10000.0));
    const auto factor = static_cast<float>(number_or(rp, "factor", 8.0));
    const auto low = static_cast<float>(number_or(rp, "low_freq_factor", 1.0));
    const auto old_ctx =
        static_cast<float>(number_or(rp, "original_max_position_embeddings", 8192));
    // Python floats meet float32 tensors: the scalar is rounded to float32 first.
    const auto low_wavelen =
        static_cast<float>(number_or(rp, "original_max_position_embeddings", 8192) /
                           number_or(rp, "low_freq_factor", 1.0));
    const auto high_wavelen =
        static_cast<float>(number_or(rp, "original_max_position_embeddings", 8192) /
                           number_or(rp, "high_freq_factor", 4.0));
    const auto span = static_cast<float>(number_or(rp, "high_freq_factor", 4.0) -
                                         number_or(rp, "low_freq_factor", 1.0));
    const auto two_pi = static_cast<float>(2.0 * std::numbers::pi);
    const auto dim = static_cast<float>(head_dim_);
    ConvTensor out{"rope_freqs.weight", {head_dim_ / 2}, {}};
    for (uint64_t i = 0; i < head_dim_; i += 2) {
      // torch's float32 `base ** t` rounds the double-precision power once (powf can be 1 ulp
      // off it: head_dim 64 showed it), then the float32 reciprocal.
      const float exponent = static_cast<float>(i) / dim;
      const float freq = 1.0f / static_cast<float>(std::pow(static_cast<double>(base),
                                                            static_cast<double>(exponent)));
      // Python's `scalar / tensor` is torch's reciprocal(tensor) * scalar, in float32.
      const float wavelen = (1.0f / freq) * two_pi;
      if (wavelen < high_wavelen) {
        out.values.push_back(1.0f);
      } else if (wavelen > low_wavelen) {
        out.values.push_back(factor);
      } else {
        const float smooth = ((1.0f / wavelen) * old_ctx - low) / span;
        out.values.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
      }
    }
    std::vector<ConvTensor> v;
    v.push_back(std::move(out));
    return v;
  }

 private:
  HfConfig cfg_;
  uint64_t n_head_, n_head_kv_, n_block_, head_dim_;
};

}  // namespace

Result<std::unique_ptr<ArchConverter>> make_llama_converter(const HfConfig& cfg) {
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_head, cfg.require_uint({"n_heads", "num_attention_heads"}));
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_head_kv,
                          cfg.require_uint({"n_kv_heads", "num_key_value_heads"}));
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_block, cfg.require_uint({"n_layers", "num_hidden_layers",
                                                              "n_layer", "num_layers"}));
  GENIEX_ASSIGN_OR_RETURN(uint64_t hidden, cfg.require_uint({"hidden_size"}));
  if (n_head == 0 || n_head_kv == 0) return invalid_argument(cfg.path + ": zero attention heads");
  uint64_t head_dim = hidden / n_head;
  if (const auto hd = cfg.params.find("head_dim"); hd != cfg.params.end() && !hd->is_null()) {
    GENIEX_ASSIGN_OR_RETURN(head_dim, cfg.require_uint({"head_dim"}));
  }
  if (cfg.find({"num_local_experts"}) != nullptr) {
    return unimplemented(cfg.path + ": Mixtral (mixture of experts) is not supported yet");
  }
  return std::unique_ptr<ArchConverter>(
      std::make_unique<LlamaConverter>(cfg, n_head, n_head_kv, n_block, head_dim));
}

}  // namespace geniex::convert
