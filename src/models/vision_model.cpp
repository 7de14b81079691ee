#include "models/vision_model.h"

#include <cmath>
#include <string>

#include "models/tensor_binder.h"

namespace geniex::models {

namespace {

Result<uint32_t> get_u32(const gguf::GgufFile& f, const std::string& key, uint32_t lo,
                         uint32_t hi) {
  GENIEX_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v < lo || v > hi)
    return invalid_argument("mmproj " + f.name() + ": " + key + " = " + std::to_string(v) +
                            " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<uint32_t>(v);
}

}  // namespace

Result<VisionConfig> load_vision_config(const gguf::GgufFile& f) {
  const auto arch = f.get_string("general.architecture");
  if (!arch.ok() || *arch != "clip")
    return invalid_argument(
        "mmproj " + f.name() + ": not a vision projector file (general.architecture is " +
        (arch.ok() ? "\"" + *arch + "\"" : std::string("missing")) + ", expected \"clip\")");
  VisionConfig c;
  const auto proj = f.get_string("clip.projector_type");
  c.projector_type = proj.ok() ? *proj : "";
  if (c.projector_type != "lfm2")
    return invalid_argument("mmproj " + f.name() + ": projector type \"" + c.projector_type +
                            "\" is not supported (this build runs LFM2-VL: \"lfm2\")");
  if (f.find("clip.has_vision_encoder") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(bool has, f.get_bool("clip.has_vision_encoder"));
    if (!has) return invalid_argument("mmproj " + f.name() + ": the file has no vision encoder");
  }
  constexpr uint32_t kBig = 1u << 16;
  GENIEX_ASSIGN_OR_RETURN(c.n_embd, get_u32(f, "clip.vision.embedding_length", 1, kBig));
  GENIEX_ASSIGN_OR_RETURN(c.n_ff, get_u32(f, "clip.vision.feed_forward_length", 1, 1u << 20));
  GENIEX_ASSIGN_OR_RETURN(c.n_head, get_u32(f, "clip.vision.attention.head_count", 1, 1024));
  GENIEX_ASSIGN_OR_RETURN(c.n_layer, get_u32(f, "clip.vision.block_count", 1, 1024));
  GENIEX_ASSIGN_OR_RETURN(c.patch_size, get_u32(f, "clip.vision.patch_size", 1, 1024));
  GENIEX_ASSIGN_OR_RETURN(c.n_embd_text, get_u32(f, "clip.vision.projection_dim", 1, kBig));
  if (f.find("clip.vision.projector.scale_factor") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(c.scale_factor, get_u32(f, "clip.vision.projector.scale_factor", 1, 8));
  }
  if (f.find("clip.vision.attention.layer_norm_epsilon") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(double eps, f.get_float("clip.vision.attention.layer_norm_epsilon"));
    if (!(eps > 0.0 && eps < 1.0))
      return invalid_argument("mmproj " + f.name() + ": layer_norm_epsilon " + std::to_string(eps) +
                              " is not in (0, 1)");
    c.eps = static_cast<float>(eps);
  }
  for (const char* key : {"clip.vision.image_mean", "clip.vision.image_std"}) {
    if (f.find(key) == nullptr) continue;
    GENIEX_ASSIGN_OR_RETURN(std::vector<float> v, f.get_float_array(key));
    if (v.size() != 3)
      return invalid_argument("mmproj " + f.name() + ": " + key + " has " +
                              std::to_string(v.size()) + " values, expected 3");
    float* dst = std::string(key).ends_with("mean") ? c.image_mean : c.image_std;
    for (int i = 0; i < 3; ++i) dst[i] = v[static_cast<size_t>(i)];
  }
  if (c.n_embd % c.n_head != 0)
    return invalid_argument("mmproj " + f.name() + ": embedding_length " +
                            std::to_string(c.n_embd) + " is not a multiple of head_count " +
                            std::to_string(c.n_head));
  // The learned position grid is square: its side comes from the table's rows.
  const gguf::TensorInfo* pos = f.find_tensor("v.position_embd.weight");
  if (pos != nullptr) {
    const auto side =
        static_cast<uint32_t>(std::lround(std::sqrt(static_cast<double>(pos->ne[1]))));
    if (static_cast<uint64_t>(side) * side != pos->ne[1] || side == 0)
      return invalid_argument("mmproj " + f.name() + ": v.position_embd.weight has " +
                              std::to_string(pos->ne[1]) + " rows, not a square grid");
    c.n_pos_side = side;
  }
  return c;
}

Result<VisionWeights> bind_vision_weights(const gguf::GgufFile& file, const VisionConfig& c) {
  Binder b(file);
  VisionWeights w;
  const uint64_t e = c.n_embd;
  const uint64_t p = c.patch_size;
  w.patch_w = b.bind("v.patch_embd.weight", {p, p, 3, e});
  w.patch_b = b.bind("v.patch_embd.bias", {e});
  w.pos = b.bind("v.position_embd.weight", {e, static_cast<uint64_t>(c.n_pos_side) * c.n_pos_side});
  w.layers.resize(c.n_layer);
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    VisionLayerWeights& l = w.layers[il];
    const std::string pre = "v.blk." + std::to_string(il) + ".";
    l.ln1_w = b.bind(pre + "ln1.weight", {e});
    l.ln1_b = b.bind(pre + "ln1.bias", {e});
    l.q_w = b.bind(pre + "attn_q.weight", {e, e});
    l.q_b = b.bind(pre + "attn_q.bias", {e});
    l.k_w = b.bind(pre + "attn_k.weight", {e, e});
    l.k_b = b.bind(pre + "attn_k.bias", {e});
    l.v_w = b.bind(pre + "attn_v.weight", {e, e});
    l.v_b = b.bind(pre + "attn_v.bias", {e});
    l.out_w = b.bind(pre + "attn_out.weight", {e, e});
    l.out_b = b.bind(pre + "attn_out.bias", {e});
    l.ln2_w = b.bind(pre + "ln2.weight", {e});
    l.ln2_b = b.bind(pre + "ln2.bias", {e});
    l.up_w = b.bind(pre + "ffn_up.weight", {e, c.n_ff});
    l.up_b = b.bind(pre + "ffn_up.bias", {c.n_ff});
    l.down_w = b.bind(pre + "ffn_down.weight", {c.n_ff, e});
    l.down_b = b.bind(pre + "ffn_down.bias", {e});
  }
  w.post_ln_w = b.bind("v.post_ln.weight", {e});
  w.post_ln_b = b.bind("v.post_ln.bias", {e});
  const uint64_t merged = e * c.scale_factor * c.scale_factor;
  w.mm_norm_w = b.bind("mm.input_norm.weight", {merged}, /*required=*/false);
  if (w.mm_norm_w != nullptr) w.mm_norm_b = b.bind("mm.input_norm.bias", {merged});
  w.mm1_w = file.find_tensor("mm.1.weight");
  const uint64_t hidden = w.mm1_w != nullptr ? w.mm1_w->ne[1] : 0;
  w.mm1_w = b.bind("mm.1.weight", {merged, hidden});
  w.mm1_b = b.bind("mm.1.bias", {hidden});
  w.mm2_w = b.bind("mm.2.weight", {hidden, c.n_embd_text});
  w.mm2_b = b.bind("mm.2.bias", {c.n_embd_text});
  GENIEX_TRY(b.status());
  return w;
}

}  // namespace geniex::models
