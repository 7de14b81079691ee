// lfm2 (LFM2: short-convolution + attention hybrid): llama.cpp's LFM2Model rules. Per-layer KV
// head counts (0 for conv layers), the auto-adjusted feed-forward width, the conv cache length;
// the depthwise conv weight [E, 1, L] is squeezed to [E, L] (and stays F32).
#include <string_view>

#include "convert/arch.h"
#include "convert/tensor_names.h"

namespace geniex::convert {
namespace {

using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

// LFM2's own names, after "model.layers.N." (the rest are the common decoder names).
constexpr Rename kLayer[] = {
    {"operator_norm", "attn_norm"},
    {"ffn_norm", "ffn_norm"},
    {"feed_forward.w1", "ffn_gate"},
    {"feed_forward.w2", "ffn_down"},
    {"feed_forward.w3", "ffn_up"},
    {"conv.conv", "shortconv.conv"},
    {"conv.in_proj", "shortconv.in_proj"},
    {"conv.out_proj", "shortconv.out_proj"},
    {"self_attn.q_layernorm", "attn_q_norm"},
    {"self_attn.k_layernorm", "attn_k_norm"},
    {"self_attn.out_proj", "attn_output"},
};

class Lfm2Converter : public ArchConverter {
 public:
  explicit Lfm2Converter(uint64_t n_block) : n_block_(n_block) {}

  std::string gguf_arch() const override { return "lfm2"; }

  Status add_params(const HfConfig& cfg, gguf::GgufWriter& w) const override {
    const auto lt = cfg.params.find("layer_types");
    if (lt == cfg.params.end() || !lt->is_array() || lt->size() != n_block_) {
      return invalid_argument(cfg.path + ": lfm2 needs \"layer_types\" with one entry per layer");
    }
    GENIEX_ASSIGN_OR_RETURN(uint64_t n_kv, cfg.require_uint({"num_key_value_heads"}));
    std::vector<int64_t> kv;
    for (const json& t : *lt) {
      if (!t.is_string())
        return invalid_argument(cfg.path + ": layer_types entries must be strings");
      kv.push_back(t.get<std::string>() == "conv" ? 0 : static_cast<int64_t>(n_kv));
    }
    w.set("lfm2.attention.head_count_kv", Value::of_int_array(ValueType::kInt32, std::move(kv)));
    GENIEX_ASSIGN_OR_RETURN(uint64_t vocab, cfg.require_uint({"vocab_size"}));
    w.set("lfm2.vocab_size", Value::of_uint(ValueType::kUint32, vocab));
    GENIEX_ASSIGN_OR_RETURN(uint64_t l_cache, cfg.require_uint({"conv_L_cache"}));
    w.set("lfm2.shortconv.l_cache", Value::of_uint(ValueType::kUint32, l_cache));
    const json* eps = cfg.find({"norm_eps"});
    if (eps == nullptr || !eps->is_number()) return invalid_argument(cfg.path + ": needs norm_eps");
    w.set("lfm2.attention.layer_norm_rms_epsilon",
          Value::of_float(ValueType::kFloat32, eps->get<double>()));
    // The feed-forward width after LFM2's auto-adjustment (2/3, multiplier, round up).
    GENIEX_ASSIGN_OR_RETURN(uint64_t ff, cfg.require_uint({"block_ff_dim", "intermediate_size"}));
    const auto adjust = cfg.params.find("block_auto_adjust_ff_dim");
    if (adjust != cfg.params.end() && adjust->is_boolean() && adjust->get<bool>()) {
      ff = static_cast<uint64_t>(2.0 * static_cast<double>(ff) / 3.0);
      const auto mult = cfg.params.find("block_ffn_dim_multiplier");
      if (mult != cfg.params.end() && mult->is_number()) {
        ff = static_cast<uint64_t>(mult->get<double>() * static_cast<double>(ff));
      }
      GENIEX_ASSIGN_OR_RETURN(uint64_t multiple, cfg.require_uint({"block_multiple_of"}));
      if (multiple == 0) return invalid_argument(cfg.path + ": block_multiple_of is 0");
      ff = multiple * ((ff + multiple - 1) / multiple);
    }
    w.set("lfm2.feed_forward_length", Value::of_uint(ValueType::kUint32, ff));
    return {};
  }

  Result<std::optional<std::string>> map_name(std::string_view hf_name) const override {
    if (hf_name == "model.embedding_norm.weight") {
      return std::optional<std::string>("token_embd_norm.weight");
    }
    GENIEX_ASSIGN_OR_RETURN(std::optional<LayerName> layer, split_layer_name(hf_name, n_block_));
    if (layer) {
      for (const Rename& r : kLayer) {
        const std::string_view tail = layer->tail;
        if (tail.starts_with(r.hf) && tail.size() > r.hf.size() && tail[r.hf.size()] == '.') {
          return std::optional<std::string>("blk." + std::to_string(layer->bid) + "." +
                                            std::string(r.gguf) +
                                            std::string(tail.substr(r.hf.size())));
        }
      }
    }
    return map_decoder_tensor_name(hf_name, n_block_);
  }

  Status transform(std::string_view hf_name, ConvTensor& t) const override {
    if (hf_name.find("conv.conv") != std::string_view::npos && t.shape.size() == 3 &&
        t.shape[1] == 1) {
      t.shape = {t.shape[0], t.shape[2]};  // squeeze(1): [E, 1, L] -> [E, L]
    }
    return {};
  }

  Result<std::vector<ConvTensor>> extra_tensors() const override {
    return std::vector<ConvTensor>{};
  }

 private:
  uint64_t n_block_;
};

}  // namespace

Result<std::unique_ptr<ArchConverter>> make_lfm2_converter(const HfConfig& cfg) {
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_block, cfg.require_uint({"n_layers", "num_hidden_layers",
                                                              "n_layer", "num_layers"}));
  return std::unique_ptr<ArchConverter>(std::make_unique<Lfm2Converter>(n_block));
}

}  // namespace geniex::convert
