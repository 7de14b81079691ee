#include "convert/tensor_names.h"

#include <charconv>

namespace geniex::convert {
namespace {

// Whole-model tensors.
constexpr Rename kGlobal[] = {
    {"model.embed_tokens", "token_embd"},
    {"model.norm", "output_norm"},
    {"lm_head", "output"},
};

// Per-layer tensors, after "model.layers.N.".
constexpr Rename kLayer[] = {
    {"input_layernorm", "attn_norm"},    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},      {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"}, {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

// Splits "stem.weight" / "stem.bias" into stem and suffix.
bool split_suffix(std::string_view name, std::string_view& stem, std::string_view& suffix) {
  for (std::string_view s : {".weight", ".bias"}) {
    if (name.ends_with(s)) {
      stem = name.substr(0, name.size() - s.size());
      suffix = s;
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::optional<std::string>> map_decoder_tensor_name(std::string_view hf_name,
                                                           uint64_t n_block) {
  if (hf_name.ends_with(".rotary_emb.inv_freq") || hf_name.ends_with(".attention.masked_bias") ||
      hf_name.ends_with(".attention.bias")) {
    return std::optional<std::string>{};
  }
  const auto unknown = [&] {
    return invalid_argument("cannot map tensor '" + std::string(hf_name) + "' to a GGUF name");
  };
  std::string_view stem, suffix;
  if (!split_suffix(hf_name, stem, suffix)) return unknown();
  for (const Rename& r : kGlobal) {
    if (stem == r.hf) return std::optional<std::string>(std::string(r.gguf) + std::string(suffix));
  }
  constexpr std::string_view kLayers = "model.layers.";
  if (!stem.starts_with(kLayers)) return unknown();
  stem.remove_prefix(kLayers.size());
  const size_t dot = stem.find('.');
  if (dot == std::string_view::npos || dot == 0) return unknown();
  uint64_t bid = 0;
  const auto [ptr, ec] = std::from_chars(stem.data(), stem.data() + dot, bid);
  if (ec != std::errc() || ptr != stem.data() + dot) return unknown();
  if (bid >= n_block) {
    return invalid_argument("tensor '" + std::string(hf_name) + "' is in layer " +
                            std::to_string(bid) + " but config.json has " +
                            std::to_string(n_block) + " layers");
  }
  stem.remove_prefix(dot + 1);
  for (const Rename& r : kLayer) {
    if (stem == r.hf) {
      return std::optional<std::string>("blk." + std::to_string(bid) + "." + std::string(r.gguf) +
                                        std::string(suffix));
    }
  }
  return unknown();
}

Result<std::optional<LayerName>> split_layer_name(std::string_view hf_name, uint64_t n_block) {
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf_name.starts_with(kLayers)) return std::optional<LayerName>{};
  const std::string_view rest = hf_name.substr(kLayers.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::optional<LayerName>{};
  uint64_t bid = 0;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + dot, bid);
  if (ec != std::errc() || ptr != rest.data() + dot) return std::optional<LayerName>{};
  if (bid >= n_block) {
    return invalid_argument("tensor '" + std::string(hf_name) + "' is in layer " +
                            std::to_string(bid) + " but config.json has " +
                            std::to_string(n_block) + " layers");
  }
  return std::optional<LayerName>(LayerName{bid, rest.substr(dot + 1)});
}

}  // namespace geniex::convert
