#include "convert/mmproj.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "convert/convert.h"
#include "convert/json_file.h"
#include "convert/tensor_names.h"
#include "gguf/gguf_writer.h"

namespace geniex::convert {
namespace {

using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

// gguf-py's MMPROJ tensor map, the entries SigLIP2 + the LFM2 projector use.
constexpr Rename kGlobal[] = {
    {"multi_modal_projector.layer_norm", "mm.input_norm"},
    {"multi_modal_projector.linear_1", "mm.1"},
    {"multi_modal_projector.linear_2", "mm.2"},
    {"vision_tower.vision_model.embeddings.patch_embedding", "v.patch_embd"},
    {"vision_tower.vision_model.embeddings.position_embedding", "v.position_embd"},
    {"vision_tower.vision_model.post_layernorm", "v.post_ln"},
};
constexpr Rename kLayer[] = {
    {"layer_norm1", "ln1"},         {"layer_norm2", "ln2"},
    {"mlp.fc1", "ffn_up"},          {"mlp.fc2", "ffn_down"},
    {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"}, {"self_attn.out_proj", "attn_out"},
};

// "model.vision_tower.X" -> GGUF name; nullopt for the language model's tensors.
Result<std::optional<std::string>> map_name(std::string_view hf, uint64_t n_block) {
  if (hf.find("language_model.") != std::string_view::npos) return std::optional<std::string>{};
  std::string name(hf);
  for (std::string_view prefix : {"model.vision_tower.", "model.multi_modal_projector."}) {
    if (name.starts_with(prefix)) name.erase(0, 6);  // drop "model."
  }
  std::string_view stem = name, suffix;
  for (std::string_view s : {".weight", ".bias"}) {
    if (stem.ends_with(s)) {
      suffix = s;
      stem.remove_suffix(s.size());
      break;
    }
  }
  const auto unknown = [&] {
    return invalid_argument("cannot map tensor '" + std::string(hf) + "' to a projector name");
  };
  if (suffix.empty()) return unknown();
  for (const Rename& r : kGlobal) {
    if (stem == r.hf) return std::optional<std::string>(std::string(r.gguf) + std::string(suffix));
  }
  constexpr std::string_view kLayers = "vision_tower.vision_model.encoder.layers.";
  if (!stem.starts_with(kLayers)) return unknown();
  stem.remove_prefix(kLayers.size());
  const size_t dot = stem.find('.');
  uint64_t bid = 0;
  const auto [ptr, ec] =
      std::from_chars(stem.data(), stem.data() + std::min(dot, stem.size()), bid);
  if (dot == std::string_view::npos || ec != std::errc() || ptr != stem.data() + dot) {
    return unknown();
  }
  if (bid >= n_block) {
    return invalid_argument("tensor '" + std::string(hf) + "' is in vision layer " +
                            std::to_string(bid) + " of " + std::to_string(n_block));
  }
  stem.remove_prefix(dot + 1);
  for (const Rename& r : kLayer) {
    if (stem == r.hf) {
      return std::optional<std::string>("v.blk." + std::to_string(bid) + "." + std::string(r.gguf) +
                                        std::string(suffix));
    }
  }
  return unknown();
}

// MmprojModel's type rules on top of the text ones: the patch embedding is F16 for f16 output,
// else F32; the position embedding stays F32.
GgmlType mmproj_type(const std::string& name, size_t n_dims, uint64_t row, OutType out) {
  if (name.find(".patch_embd.weight") != std::string::npos) {
    return out == OutType::kF16 ? GgmlType::kF16 : GgmlType::kF32;
  }
  if (name == "v.position_embd.weight") return GgmlType::kF32;
  return choose_type(name, n_dims, row, out);
}

Result<uint64_t> vparam(const json& v, const char* key, const std::string& path) {
  const auto it = v.find(key);
  if (it == v.end() || !it->is_number_unsigned()) {
    return invalid_argument(path + ": vision_config needs a non-negative integer " + key);
  }
  return it->get<uint64_t>();
}

// preprocessor_config.json, then processor_config.json (its image_processor lifted), merged.
Result<json> preprocessor_config(const std::string& dir) {
  json merged = json::object();
  GENIEX_ASSIGN_OR_RETURN(std::optional<json> pre,
                          read_json_file_if_exists(dir + "/preprocessor_config.json"));
  GENIEX_ASSIGN_OR_RETURN(std::optional<json> proc,
                          read_json_file_if_exists(dir + "/processor_config.json"));
  for (const auto& [j, lift] :
       {std::pair{&pre, "media_proc_cfg"}, std::pair{&proc, "image_processor"}}) {
    if (!j->has_value() || !(*j)->is_object()) continue;
    json cfg = **j;
    if (cfg.contains(lift) && cfg[lift].is_object()) {
      for (const auto& [k, val] : cfg[lift].items()) cfg[k] = val;
    }
    for (const auto& [k, val] : cfg.items()) merged[k] = val;
  }
  return merged;
}

Result<std::vector<double>> float_list(const json& j, const char* key, const std::string& dir) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) {
    return not_found(dir + ": no " + key + " in preprocessor_config.json / processor_config.json");
  }
  std::vector<double> out;
  for (const json& x : *it) {
    if (!x.is_number()) return invalid_argument(dir + ": " + key + " holds a non-number");
    out.push_back(x.get<double>());
  }
  return out;
}

}  // namespace

Result<MmprojReport> convert_mmproj(const std::string& hf_dir, const HfConfig& cfg,
                                    const SafetensorsModel& st, OutType out,
                                    const std::string& name, const std::string& out_path) {
  if (cfg.top_arch != "Lfm2VlForConditionalGeneration") {
    return unimplemented(cfg.path + ": no vision projector conversion for '" + cfg.top_arch +
                         "' (supported: Lfm2VlForConditionalGeneration)");
  }
  const auto vc = cfg.params.find("vision_config");
  if (vc == cfg.params.end() || !vc->is_object()) {
    return invalid_argument(cfg.path + ": no vision_config");
  }
  const json& v = *vc;
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_embd_text, cfg.require_uint({"hidden_size", "n_embd"}));
  GENIEX_ASSIGN_OR_RETURN(uint64_t patch, vparam(v, "patch_size", cfg.path));
  GENIEX_ASSIGN_OR_RETURN(uint64_t width, vparam(v, "hidden_size", cfg.path));
  GENIEX_ASSIGN_OR_RETURN(uint64_t ff, vparam(v, "intermediate_size", cfg.path));
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_block, vparam(v, "num_hidden_layers", cfg.path));
  GENIEX_ASSIGN_OR_RETURN(uint64_t heads, vparam(v, "num_attention_heads", cfg.path));
  const auto eps = v.find("layer_norm_eps");
  if (eps == v.end() || !eps->is_number()) {
    return invalid_argument(cfg.path + ": vision_config needs layer_norm_eps");
  }
  GENIEX_ASSIGN_OR_RETURN(json pre, preprocessor_config(hf_dir));
  GENIEX_ASSIGN_OR_RETURN(std::vector<double> mean, float_list(pre, "image_mean", hf_dir));
  GENIEX_ASSIGN_OR_RETURN(std::vector<double> stdv, float_list(pre, "image_std", hf_dir));
  // The top-level config (not merged with text_config) holds the projector settings.
  int64_t downsample = 2;
  int64_t feature_layer = -1;
  GENIEX_ASSIGN_OR_RETURN(json top, read_json_file(cfg.path));
  if (const auto d = top.find("downsample_factor"); d != top.end() && d->is_number_integer()) {
    downsample = d->get<int64_t>();
  }
  if (const auto f = top.find("vision_feature_layer"); f != top.end() && f->is_number_integer()) {
    feature_layer = f->get<int64_t>();
  }
  const int64_t drop = -(feature_layer + 1);
  if (downsample < 0 || drop < 0 || static_cast<uint64_t>(drop) > n_block) {
    return invalid_argument(cfg.path + ": downsample_factor / vision_feature_layer out of range");
  }

  auto u32 = [](uint64_t x) { return Value::of_uint(ValueType::kUint32, x); };
  gguf::GgufWriter w;
  w.set("general.architecture", Value::of_string("clip"));
  w.set("general.type", Value::of_string("mmproj"));
  w.set("general.name", Value::of_string(name));
  w.set("general.size_label", Value::of_string(""));
  w.set("general.file_type", u32(file_type_of(out)));
  w.set("clip.has_vision_encoder", Value::of_bool(true));
  w.set("clip.vision.projection_dim", u32(n_embd_text));
  w.set("clip.vision.image_size", u32(256));  // LFM2-VL: dynamic resolution; llama.cpp's value
  w.set("clip.vision.patch_size", u32(patch));
  w.set("clip.vision.embedding_length", u32(width));
  w.set("clip.vision.feed_forward_length", u32(ff));
  w.set("clip.vision.block_count", u32(n_block - static_cast<uint64_t>(drop)));
  w.set("clip.vision.attention.head_count", u32(heads));
  w.set("clip.vision.image_mean", Value::of_float_array(ValueType::kFloat32, std::move(mean)));
  w.set("clip.vision.image_std", Value::of_float_array(ValueType::kFloat32, std::move(stdv)));
  w.set("clip.projector_type", Value::of_string("lfm2"));
  w.set("clip.vision.attention.layer_norm_epsilon",
        Value::of_float(ValueType::kFloat32, eps->get<double>()));
  w.set("clip.vision.projector.scale_factor", u32(static_cast<uint64_t>(downsample)));
  w.set("clip.use_gelu", Value::of_bool(true));
  w.set("general.quantization_version", u32(2));

  MmprojReport report;
  for (const StTensor* s : st.tensors()) {
    GENIEX_ASSIGN_OR_RETURN(std::optional<std::string> gname, map_name(s->name, n_block));
    if (!gname) continue;
    GENIEX_ASSIGN_OR_RETURN(std::vector<float> values, decode_to_f32(*s));
    std::vector<uint64_t> shape = s->shape;
    if (gname->find("patch_embd.weight") != std::string::npos) {
      // HF: [out, 16 * 16 * 3] over (y, x, channel); GGML's conv kernel: [out, 3, 16, 16].
      constexpr uint64_t kP = 16;
      if (shape.size() != 2 || shape[1] != kP * kP * 3) {
        return invalid_argument("tensor '" + s->name + "' is not [out, 16*16*3]");
      }
      std::vector<float> permuted(values.size());
      for (uint64_t o = 0; o < shape[0]; ++o) {
        for (uint64_t c = 0; c < 3; ++c) {
          for (uint64_t y = 0; y < kP; ++y) {
            for (uint64_t x = 0; x < kP; ++x) {
              permuted[((o * 3 + c) * kP + y) * kP + x] = values[((o * kP + y) * kP + x) * 3 + c];
            }
          }
        }
      }
      values = std::move(permuted);
      shape = {shape[0], 3, kP, kP};
    }
    std::vector<uint64_t> ne(shape.rbegin(), shape.rend());
    if (ne.empty()) ne.push_back(1);
    const GgmlType type = mmproj_type(*gname, shape.size(), ne[0], out);
    GENIEX_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, encode(values, ne[0], type));
    report.n_params += values.size();
    GENIEX_TRY(w.add_tensor(*gname, type, std::move(ne), bytes));
    ++report.n_tensors;
  }
  if (report.n_tensors == 0) return invalid_argument(hf_dir + ": no vision tensors found");
  w.set("general.size_label", Value::of_string(size_label(report.n_params)));
  GENIEX_TRY(w.write(out_path));
  return report;
}

}  // namespace geniex::convert
