// VisionEncoder: the image side of a vision-language model at run time. It owns the mmproj file,
// turns an Image (path or encoded bytes) into the prompt ids of its expansion (LFM2-VL markers
// and one `<image>` token per feature row) and the feature rows themselves, by decoding,
// preprocessing (bit-exact with transformers) and running each view's encoder graph through the
// model's scheduler. Graph, position table and unshuffle order are kept per view size.
#pragma once

#include <cstdint>
#include <memory>
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
#include "vision/lfm2vl_prompt.h"

namespace geniex::engine {

/// One image, ready for the decoder.
struct EncodedImage {
  std::vector<int32_t> ids;  ///< its expansion in the prompt (markers and `<image>` runs)
  std::vector<float> rows;   ///< one n_embd row per `<image>` id, in order
  int32_t n_views = 0;
  int32_t n_image_tokens = 0;
  double encode_ms = 0.0;  ///< decode + preprocess + encoder
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

  /// Decodes, preprocesses and encodes one image on `scheduler`. kInvalidArgument for an
  /// undecodable, empty or oversized image.
  Result<EncodedImage> encode(const Image& image, runtime::Scheduler& scheduler);

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
