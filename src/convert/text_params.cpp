#include "convert/text_params.h"

#include "convert/json_file.h"

namespace geniex::convert {
namespace {

using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

bool is_uint(const json& j) {
  return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0);
}

Value u32(uint64_t v) { return Value::of_uint(ValueType::kUint32, v); }
Value f32(double v) { return Value::of_float(ValueType::kFloat32, v); }

}  // namespace

const json* HfConfig::find(std::initializer_list<const char*> keys) const {
  for (const char* k : keys) {
    const auto it = params.find(k);
    if (it != params.end()) return it->is_null() ? nullptr : &*it;
  }
  return nullptr;
}

Result<uint64_t> HfConfig::require_uint(std::initializer_list<const char*> keys) const {
  const json* j = find(keys);
  if (j == nullptr || !is_uint(*j)) {
    std::string names;
    for (const char* k : keys) names += (names.empty() ? "" : " / ") + std::string(k);
    return invalid_argument(path + ": needs a non-negative integer " + names);
  }
  return j->get<uint64_t>();
}

const json& HfConfig::full_attention_rope() const {
  const auto it = rope.find("full_attention");
  return it != rope.end() && it->is_object() ? *it : rope;
}

Result<HfConfig> load_hf_config(const std::string& dir) {
  HfConfig c;
  c.path = dir + "/config.json";
  auto j = read_json_file(c.path);
  if (!j.ok()) {
    if (j.status().code() == StatusCode::kNotFound) {
      return not_found("missing " + c.path + " (is " + dir +
                       " a Hugging Face checkpoint directory?)");
    }
    return j.status();
  }
  c.params = std::move(j).value();
  if (!c.params.is_object()) return data_loss(c.path + ": not a JSON object");
  const auto archs = c.params.find("architectures");
  if (archs == c.params.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    return invalid_argument(c.path + ": no \"architectures\" list naming the model class");
  }
  c.hf_arch = c.top_arch = (*archs)[0].get<std::string>();
  if (const auto tc = c.params.find("text_config"); tc != c.params.end() && tc->is_object()) {
    // As llama.cpp: the text model's own class names the text architecture.
    if (const auto ta = tc->find("architectures");
        ta != tc->end() && ta->is_array() && !ta->empty() && (*ta)[0].is_string()) {
      c.hf_arch = (*ta)[0].get<std::string>();
    }
    json merged = c.params;
    for (const auto& [k, v] : tc->items()) merged[k] = v;
    c.params = std::move(merged);
  }
  // RoPE parameters, with the top-level aliases mirrored in (TextModel.__init__).
  c.rope = json::object();
  for (const char* k : {"rope_parameters", "rope_scaling"}) {
    const auto it = c.params.find(k);
    if (it != c.params.end()) {
      if (it->is_object()) c.rope = *it;
      break;
    }
  }
  if (!c.rope.contains("full_attention") && !c.rope.contains("sliding_attention")) {
    const json* local = c.find({"local_rope_theta", "rope_local_theta", "rope_theta_local",
                                "swa_rope_theta", "rope_local_base_freq"});
    if (local != nullptr) c.rope["sliding_attention"] = json{{"rope_theta", *local}};
    const json* theta = c.find({"global_rope_theta", "rope_global_theta", "rope_theta_global",
                                "rope_theta", "rotary_emb_base"});
    if (!c.rope.contains("rope_theta") && theta != nullptr) c.rope["rope_theta"] = *theta;
    if (!c.rope.contains("rope_type") && c.rope.contains("type") && !c.rope["type"].is_null()) {
      c.rope["rope_type"] = c.rope["type"];
    }
    const json* partial = c.find({"partial_rotary_factor", "rope_pct", "rope_percent"});
    if (!c.rope.contains("partial_rotary_factor") && partial != nullptr) {
      c.rope["partial_rotary_factor"] = *partial;
    }
    const json* orig = c.find({"original_max_position_embeddings"});
    if (!c.rope.contains("original_max_position_embeddings") && orig != nullptr) {
      c.rope["original_max_position_embeddings"] = *orig;
    }
  }
  return c;
}

Status add_text_params(const HfConfig& cfg, const std::string& arch, uint32_t block_count,
                       uint32_t file_type, gguf::GgufWriter& w) {
  const std::string a = arch + ".";
  auto put_uint = [&](const std::string& key, std::initializer_list<const char*> names) -> Status {
    const json* j = cfg.find(names);
    if (j == nullptr) return {};
    if (!is_uint(*j) || j->get<uint64_t>() > UINT32_MAX) {
      return invalid_argument(cfg.path + ": '" + key + "' source is not a 32-bit unsigned integer");
    }
    w.set(key, u32(j->get<uint64_t>()));
    return {};
  };
  w.set(a + "block_count", u32(block_count));
  GENIEX_TRY(
      put_uint(a + "context_length", {"max_position_embeddings", "n_ctx", "n_positions",
                                      "max_length", "max_sequence_length", "model_max_length"}));
  GENIEX_TRY(put_uint(a + "embedding_length", {"hidden_size", "n_embd", "dim"}));
  GENIEX_TRY(put_uint(a + "feed_forward_length",
                      {"prefix_dense_intermediate_size", "dense_intermediate_size",
                       "intermediate_size", "n_inner", "hidden_dim"}));
  GENIEX_TRY(put_uint(a + "attention.head_count", {"num_attention_heads", "n_head", "n_heads"}));
  GENIEX_TRY(put_uint(a + "attention.head_count_kv", {"num_key_value_heads", "n_kv_heads"}));
  if (const auto c = cfg.params.find("is_causal");
      c != cfg.params.end() && c->is_boolean() && !c->get<bool>()) {
    w.set(a + "attention.causal", Value::of_bool(false));
  }
  const json& rp = cfg.full_attention_rope();
  if (const auto rt = rp.find("rope_type"); rt != rp.end() && rt->is_string()) {
    const std::string type = rt->get<std::string>();
    const auto factor = rp.find("factor");
    const bool has_factor = factor != rp.end() && factor->is_number();
    if (type == "linear" && has_factor) {
      w.set(a + "rope.scaling.type", Value::of_string("linear"));
      w.set(a + "rope.scaling.factor", f32(factor->get<double>()));
    } else if (type == "yarn" && has_factor) {
      w.set(a + "rope.scaling.type", Value::of_string("yarn"));
      w.set(a + "rope.scaling.factor", f32(factor->get<double>()));
      const auto orig = rp.find("original_max_position_embeddings");
      if (orig == rp.end() || !is_uint(*orig)) {
        return invalid_argument(cfg.path + ": yarn RoPE needs original_max_position_embeddings");
      }
      w.set(a + "rope.scaling.original_context_length", u32(orig->get<uint64_t>()));
      for (const auto& [src, dst] :
           {std::pair{"extrapolation_factor", "yarn_ext_factor"},
            std::pair{"beta_fast", "yarn_beta_fast"}, std::pair{"beta_slow", "yarn_beta_slow"}}) {
        const auto v = rp.find(src);
        if (v != rp.end() && v->is_number())
          w.set(a + "rope.scaling." + dst, f32(v->get<double>()));
      }
    } else if (type == "su" || type == "longrope") {
      w.set(a + "rope.scaling.type", Value::of_string("longrope"));
    }
  }
  if (const auto t = rp.find("rope_theta"); t != rp.end() && t->is_number()) {
    w.set(a + "rope.freq_base", f32(t->get<double>()));
  }
  if (const auto swa = cfg.rope.find("sliding_attention");
      swa != cfg.rope.end() && swa->is_object()) {
    if (const auto t = swa->find("rope_theta"); t != swa->end() && t->is_number()) {
      w.set(a + "rope.freq_base_swa", f32(t->get<double>()));
    }
  }
  if (const json* e = cfg.find({"rms_norm_eps", "norm_eps"}); e != nullptr && e->is_number()) {
    w.set(a + "attention.layer_norm_rms_epsilon", f32(e->get<double>()));
  }
  if (const json* e = cfg.find({"layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"});
      e != nullptr && e->is_number()) {
    w.set(a + "attention.layer_norm_epsilon", f32(e->get<double>()));
  }
  if (cfg.find({"num_local_experts", "num_experts", "n_routed_experts"}) != nullptr) {
    return unimplemented(cfg.path + ": mixture-of-experts checkpoints are not supported yet");
  }
  if (const auto hd = cfg.params.find("head_dim"); hd != cfg.params.end() && !hd->is_null()) {
    if (!is_uint(*hd)) return invalid_argument(cfg.path + ": head_dim is not an integer");
    w.set(a + "attention.key_length", u32(hd->get<uint64_t>()));
    w.set(a + "attention.value_length", u32(hd->get<uint64_t>()));
  }
  w.set("general.file_type", u32(file_type));
  return {};
}

}  // namespace geniex::convert
