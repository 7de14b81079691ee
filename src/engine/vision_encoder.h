// VisionEncoder: the image side of a vision-language model at run time. It owns the mmproj file,
// turns an Image (path or encoded bytes) into the prompt ids of its expansion (LFM2-VL markers
// and one `<image>` token per feature row) by decoding and preprocessing (bit-exact with
// transformers: prepare(), on any thread), and into the feature rows by running each view's
// encoder graph through the model's scheduler (encode(), on the engine thread, only when a
// prefill reaches the image). Graph, position table and unshuffle order are kept per view size.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "geniex/geniex.hpp"
#include "gguf/gguf_reader.h"
#include "models/model_config.h"
#include "models/vision_graph.h"
#include "models/vision_model.h"
#include "runtime/scheduler.h"
#include "tokenizer/tokenizer.h"
#include "vision/image_decode.h"
#include "vision/lfm2vl_geometry.h"
#include "vision/lfm2vl_preprocess.h"
#include "vision/lfm2vl_prompt.h"

namespace geniex::engine {

/// One image decoded and preprocessed (prepare()), not encoded yet: its expansion in the prompt
/// and the views the encoder takes.
struct PreparedImage {
  std::vector<int32_t> ids;  ///< its expansion in the prompt (markers and `<image>` runs)
  vision::PreprocessedImage pre;
  int32_t n_image_tokens = 0;  ///< `<image>` ids in `ids`: the feature rows encode() writes
  uint64_t hash = 0;           ///< of the views' sizes and pixel values (the image's cache key)
  double prepare_ms = 0.0;     ///< decode + preprocess
};

class VisionEncoder {
 public:
  /// Opens `path` and checks it fits the text model (`general.architecture` clip, projector
  /// "lfm2", projection width = the model's embedding width, an LFM2 text model whose
  /// vocabulary has the image marker tokens). Errors name the file and the mismatch.
  static Result<std::unique_ptr<VisionEncoder>> load(const std::string& path,
                                                     const models::ModelConfig& text,
                                                     const tokenizer::Tokenizer& tok);
  ~VisionEncoder();

  /// Decodes and preprocesses one image. kInvalidArgument for an undecodable, empty or
  /// oversized image. Needs no backend: any thread, concurrently with encode().
  Result<PreparedImage> prepare(const Image& image) const;
  /// Runs the encoder over the views of `image` on `scheduler`, writing its n_image_tokens
  /// feature rows (n_embd floats each) to `rows`. Returns the milliseconds it took.
  Result<double> encode(const PreparedImage& image, runtime::Scheduler& scheduler,
                        std::span<float> rows);

  /// The text of the image marker ("<image>") and its token id.
  [[nodiscard]] const std::string& marker() const { return marker_; }
  [[nodiscard]] int32_t image_token() const { return ids_.image; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const models::VisionConfig& config() const { return config_; }
  /// The graph of a view of patches_h x patches_w patches (for placement explanations).
  Result<const models::VisionGraph*> graph_for(int32_t patches_h, int32_t patches_w);

  /// Largest decoded image accepted, in pixels.
  static constexpr uint64_t kMaxPixels = 64ull * 1024 * 1024;

 private:
  struct Shape;
  VisionEncoder() = default;
  Result<Shape*> shape_for(int32_t patches_h, int32_t patches_w);

  std::string path_;
  std::unique_ptr<gguf::GgufFile> file_;
  models::VisionConfig config_;
  models::VisionWeights weights_;
  vision::Lfm2VlImageParams params_;
  vision::Lfm2VlImageTokenIds ids_;
  std::string marker_ = "<image>";
  std::vector<std::unique_ptr<Shape>> shapes_;  ///< most recently used last
};

}  // namespace geniex::engine
