// gemma3 (Gemma 3 text): llama.cpp's Gemma3Model rules. Norm weights are stored as 1 + w
// (Gemma3RMSNorm computes x * (1 + w)), rows of token_embd past the tokenizer's vocabulary are
// dropped, the sandwich norms get their own names, and a SentencePiece tokenizer.model is the
// vocabulary (add_space_prefix false).
#include <algorithm>
#include <filesystem>

#include "convert/arch.h"
#include "convert/json_file.h"
#include "convert/tensor_names.h"

namespace geniex::convert {
namespace {

using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

// Gemma 3's layer norms, after "model.layers.N." (the rest are the common decoder names).
constexpr std::pair<std::string_view, std::string_view> kNorms[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};

class Gemma3Converter : public ArchConverter {
 public:
  Gemma3Converter(std::string dir, uint64_t n_block, uint64_t n_vocab_real)
      : dir_(std::move(dir)), n_block_(n_block), n_vocab_real_(n_vocab_real) {}

  std::string gguf_arch() const override { return "gemma3"; }

  Status add_params(const HfConfig& cfg, gguf::GgufWriter& w) const override {
    const json& p = cfg.params;
    auto uint_or = [&](const char* key, uint64_t fallback) -> Result<uint64_t> {
      const auto it = p.find(key);
      if (it == p.end()) return fallback;
      if (!it->is_number_unsigned()) {
        return invalid_argument(cfg.path + ": '" + key + "' is not a non-negative integer");
      }
      return it->get<uint64_t>();
    };
    auto put_u32 = [&](const std::string& key, uint64_t v) {
      w.set("gemma3." + key, Value::of_uint(ValueType::kUint32, v));
    };
    GENIEX_ASSIGN_OR_RETURN(uint64_t ctx, uint_or("max_position_embeddings", 131072));
    put_u32("context_length", ctx);
    GENIEX_ASSIGN_OR_RETURN(uint64_t heads, uint_or("num_attention_heads", 8));
    put_u32("attention.head_count", heads);
    const auto eps = p.find("rms_norm_eps");
    w.set("gemma3.attention.layer_norm_rms_epsilon",
          Value::of_float(ValueType::kFloat32,
                          eps != p.end() && eps->is_number() ? eps->get<double>() : 1e-6));
    GENIEX_ASSIGN_OR_RETURN(uint64_t head_dim, uint_or("head_dim", 256));
    put_u32("attention.key_length", head_dim);
    put_u32("attention.value_length", head_dim);
    const json& rope = cfg.full_attention_rope();
    const auto theta = rope.find("rope_theta");
    w.set("gemma3.rope.freq_base",
          Value::of_float(ValueType::kFloat32, theta != rope.end() && theta->is_number()
                                                   ? theta->get<double>()
                                                   : 1'000'000.0));
    const auto cap = p.find("attn_logit_softcapping");
    if (cap != p.end() && !cap->is_null()) {
      return unimplemented(cfg.path + ": attn_logit_softcapping is not part of Gemma 3");
    }
    const auto final_cap = p.find("final_logit_softcapping");
    if (final_cap != p.end() && final_cap->is_number() && final_cap->get<double>() != 0.0) {
      w.set("gemma3.final_logit_softcapping",
            Value::of_float(ValueType::kFloat32, final_cap->get<double>()));
    }
    const auto pattern = p.find("sliding_window_pattern");
    if (pattern == p.end() || !(pattern->is_number_integer() && pattern->get<int64_t>() == 1)) {
      GENIEX_ASSIGN_OR_RETURN(uint64_t window, cfg.require_uint({"sliding_window"}));
      put_u32("attention.sliding_window", window);
    }
    GENIEX_ASSIGN_OR_RETURN(uint64_t kv, uint_or("num_key_value_heads", 4));
    put_u32("attention.head_count_kv", kv);
    return {};
  }

  Result<std::optional<std::string>> map_name(std::string_view hf_name) const override {
    GENIEX_ASSIGN_OR_RETURN(std::optional<LayerName> layer, split_layer_name(hf_name, n_block_));
    if (layer) {
      for (const auto& [hf, gg] : kNorms) {
        if (layer->tail == hf) {
          return std::optional<std::string>("blk." + std::to_string(layer->bid) + "." +
                                            std::string(gg));
        }
      }
    }
    return map_decoder_tensor_name(hf_name, n_block_);
  }

  Status transform(std::string_view hf_name, ConvTensor& t) const override {
    if (hf_name.find("embed_tokens.weight") != std::string_view::npos && !t.shape.empty() &&
        t.shape[0] > n_vocab_real_) {
      const uint64_t cols = t.values.size() / t.shape[0];
      t.values.resize(n_vocab_real_ * cols);  // rows past the vocabulary are dropped
      t.shape[0] = n_vocab_real_;
    }
    if (hf_name.ends_with("norm.weight")) {
      for (float& v : t.values) v += 1.0f;
    }
    return {};
  }

  Result<std::vector<ConvTensor>> extra_tensors() const override {
    return std::vector<ConvTensor>{};
  }

  Status add_vocab(const VocabInputs& in, gguf::GgufWriter& w) const override {
    if (!std::filesystem::exists(dir_ + "/tokenizer.model")) return add_bpe_vocab(in, w);
    GENIEX_TRY(add_spm_vocab(in, w));
    w.set("tokenizer.ggml.add_space_prefix", Value::of_bool(false));
    return {};
  }

 private:
  std::string dir_;
  uint64_t n_block_;
  uint64_t n_vocab_real_;
};

}  // namespace

Result<std::unique_ptr<ArchConverter>> make_gemma3_converter(const HfConfig& cfg) {
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_block, cfg.require_uint({"n_layers", "num_hidden_layers",
                                                              "n_layer", "num_layers"}));
  const std::string dir = cfg.path.substr(0, cfg.path.size() - std::string("/config.json").size());
  // The real vocabulary size: the SentencePiece table padded to vocab_size, else tokenizer.json.
  uint64_t n_vocab = UINT64_MAX;
  if (std::filesystem::exists(dir + "/tokenizer.model")) {
    GENIEX_ASSIGN_OR_RETURN(n_vocab, cfg.require_uint({"vocab_size"}));
  } else {
    GENIEX_ASSIGN_OR_RETURN(json tj, read_json_file(dir + "/tokenizer.json"));
    const auto m = tj.find("model");
    const auto added = tj.find("added_tokens");
    if (m == tj.end() || !m->is_object() || !m->contains("vocab") || added == tj.end()) {
      return data_loss(dir + "/tokenizer.json: no model.vocab / added_tokens");
    }
    n_vocab = (*m)["vocab"].size() + added->size();
  }
  return std::unique_ptr<ArchConverter>(std::make_unique<Gemma3Converter>(dir, n_block, n_vocab));
}

}  // namespace geniex::convert
