#include "engine/vision_encoder.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/fnv1a.h"
#include "vision/lfm2vl_preprocess.h"

namespace geniex::engine {

struct VisionEncoder::Shape {
  int32_t patches_h = 0, patches_w = 0;
  models::VisionGraph vg;
  std::vector<float> pos;
  std::vector<int32_t> unshuffle, zeros;
};

namespace {

constexpr size_t kMaxShapes = 4;  // view sizes kept (tiles and a thumbnail: usually two)

// The id of a special token spelled `text`, or -1 when the vocabulary lacks it.
int32_t special_id(const tokenizer::Tokenizer& tok, const std::string& text) {
  tokenizer::EncodeOptions o;
  o.add_special = false;
  o.parse_special = true;
  auto ids = tok.encode(text, o);
  if (!ids.ok() || ids->size() != 1 || tok.token_text((*ids)[0]) != text) return -1;
  return (*ids)[0];
}

}  // namespace

VisionEncoder::~VisionEncoder() = default;

Result<std::unique_ptr<VisionEncoder>> VisionEncoder::load(const std::string& path,
                                                           const models::ModelConfig& text,
                                                           const tokenizer::Tokenizer& tok) {
  std::unique_ptr<VisionEncoder> e(new VisionEncoder());
  e->path_ = path;
  GENIEX_ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::open(path));
  e->file_ = std::make_unique<gguf::GgufFile>(std::move(f));
  GENIEX_ASSIGN_OR_RETURN(e->config_, models::load_vision_config(*e->file_));
  if (e->config_.n_embd_text != text.n_embd)
    return invalid_argument("mmproj " + path + " does not match the model: its projector gives " +
                            std::to_string(e->config_.n_embd_text) +
                            "-wide embeddings, the model's are " + std::to_string(text.n_embd));
  GENIEX_ASSIGN_OR_RETURN(e->weights_, models::bind_vision_weights(*e->file_, e->config_));
  if (text.arch != models::Architecture::kLfm2)
    return invalid_argument("mmproj " + path + " is an LFM2-VL projector but the model is " +
                            text.arch_name + " (expected lfm2)");
  if (e->config_.patch_size != 16 || e->config_.scale_factor != 2)
    return invalid_argument("mmproj " + path + ": patch size " +
                            std::to_string(e->config_.patch_size) + " / scale factor " +
                            std::to_string(e->config_.scale_factor) +
                            " (LFM2-VL preprocessing uses 16 / 2)");
  vision::Lfm2VlImageTokenIds& ids = e->ids_;
  ids.image = special_id(tok, "<image>");
  ids.img_row_col_base = special_id(tok, "<|img_row_1_col_1|>");
  ids.thumbnail = special_id(tok, "<|img_thumbnail|>");
  ids.image_start = special_id(tok, "<|image_start|>");
  ids.image_end = special_id(tok, "<|image_end|>");
  const bool rows_ok = ids.img_row_col_base >= 0 &&
                       special_id(tok, "<|img_row_10_col_10|>") == ids.img_row_col_base + 99;
  if (ids.image < 0 || ids.thumbnail < 0 || ids.image_start < 0 || ids.image_end < 0 || !rows_ok)
    return invalid_argument(
        "model vocabulary lacks LFM2-VL's image tokens (<image>, "
        "<|image_start|>, <|image_end|>, <|img_thumbnail|>, "
        "<|img_row_R_col_C|>): not a vision-language model for " +
        path);
  for (int c = 0; c < 3; ++c) {
    e->params_.image_mean[static_cast<size_t>(c)] = e->config_.image_mean[c];
    e->params_.image_std[static_cast<size_t>(c)] = e->config_.image_std[c];
  }
  GENIEX_TRY(vision::validate(e->params_));
  return e;
}

Result<VisionEncoder::Shape*> VisionEncoder::shape_for(int32_t ph, int32_t pw) {
  for (size_t i = 0; i < shapes_.size(); ++i) {
    if (shapes_[i]->patches_h == ph && shapes_[i]->patches_w == pw) {
      std::rotate(shapes_.begin() + static_cast<long>(i),
                  shapes_.begin() + static_cast<long>(i) + 1, shapes_.end());
      return shapes_.back().get();
    }
  }
  auto s = std::make_unique<Shape>();
  s->patches_h = ph;
  s->patches_w = pw;
  GENIEX_ASSIGN_OR_RETURN(s->vg, models::build_vision_graph(config_, weights_, ph, pw));
  GENIEX_ASSIGN_OR_RETURN(
      s->pos, models::resize_position_table(*weights_.pos, static_cast<int32_t>(config_.n_pos_side),
                                            ph, pw));
  s->unshuffle = models::unshuffle_rows(ph, pw, static_cast<int32_t>(config_.scale_factor));
  s->zeros.assign(static_cast<size_t>(ph) * pw, 0);
  if (shapes_.size() >= kMaxShapes) shapes_.erase(shapes_.begin());
  shapes_.push_back(std::move(s));
  return shapes_.back().get();
}

Result<const models::VisionGraph*> VisionEncoder::graph_for(int32_t ph, int32_t pw) {
  GENIEX_ASSIGN_OR_RETURN(Shape * s, shape_for(ph, pw));
  return &s->vg;
}

Result<PreparedImage> VisionEncoder::prepare(const Image& image) const {
  const auto t0 = std::chrono::steady_clock::now();
  vision::DecodeOptions dopt;
  dopt.max_pixels = kMaxPixels;
  Result<vision::RgbImage> rgb =
      image.bytes.empty() ? (image.path.empty() ? Result<vision::RgbImage>(invalid_argument(
                                                      "image: neither bytes nor a path were given"))
                                                : vision::decode_image_file(image.path, dopt))
                          : vision::decode_image(image.bytes, dopt);
  if (!rgb.ok()) {
    const std::string what = image.bytes.empty() ? "image " + image.path : "image";
    return Status(rgb.status().code(), what + ": " + rgb.status().message());
  }
  PreparedImage out;
  GENIEX_ASSIGN_OR_RETURN(out.pre, vision::preprocess_lfm2vl(*rgb, params_));
  GENIEX_ASSIGN_OR_RETURN(out.ids, vision::expand_image_ids(out.pre.layout, ids_));
  out.n_image_tokens = static_cast<int32_t>(std::count(out.ids.begin(), out.ids.end(), ids_.image));
  // Same views, same pixels: the same features. The key covers what the encoder sees.
  uint64_t h = kFnv1aOffset;
  for (const auto& view : out.pre.views) {
    const int32_t dims[2] = {view.geometry.size.height, view.geometry.size.width};
    h = fnv1a(dims, sizeof(dims), h);
    h = fnv1a(view.pixels.data(), view.pixels.size() * sizeof(float), h);
  }
  out.hash = h;
  out.prepare_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

Result<double> VisionEncoder::encode(const PreparedImage& image, runtime::Scheduler& scheduler,
                                     std::span<float> rows) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t e = config_.n_embd_text;
  if (rows.size() != static_cast<size_t>(image.n_image_tokens) * e)
    return internal_error("image: " + std::to_string(rows.size() / e) + " rows for " +
                          std::to_string(image.n_image_tokens) + " <image> tokens");
  const auto p = static_cast<int32_t>(config_.patch_size);
  size_t first = 0;
  for (const auto& view : image.pre.views) {
    GENIEX_ASSIGN_OR_RETURN(Shape * s, shape_for(view.geometry.patches_h, view.geometry.patches_w));
    const auto n = static_cast<size_t>(s->vg.n_tokens) * e;
    if (first + n > rows.size())
      return internal_error("image: the views give more feature rows than <image> tokens");
    const std::vector<float> patches =
        models::patch_rows(view.pixels, view.geometry.size.height, view.geometry.size.width, p);
    graph::Bindings b;
    b.bind_input(s->vg.patches, std::span<const float>(patches));
    b.bind_input(s->vg.pos_embd, std::span<const float>(s->pos));
    b.bind_input(s->vg.positions, std::span<const int32_t>(s->zeros));
    b.bind_input(s->vg.unshuffle, std::span<const int32_t>(s->unshuffle));
    models::bind_vision_weights(s->vg, b);
    b.bind_output(s->vg.features, rows.subspan(first, n));
    GENIEX_TRY(scheduler.run(s->vg.graph, b));
    first += n;
  }
  if (first != rows.size())
    return internal_error("image: " + std::to_string(first / e) + " feature rows for " +
                          std::to_string(image.n_image_tokens) + " <image> tokens");
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace geniex::engine
