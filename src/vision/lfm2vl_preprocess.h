// LFM2-VL pixel preprocessing, bit-exact with transformers 5.23.0's Lfm2VlImageProcessor
// (torchvision backend): resize (uint8, antialiased bilinear), tiles, thumbnail, normalisation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "vision/image.h"
#include "vision/lfm2vl_geometry.h"

namespace geniex::vision {

/// One view ready for the vision encoder.
struct PreprocessedView {
  ViewGeometry geometry;
  /// The resized (or cut) view before normalisation; kept for tests and debugging.
  RgbImage rgb;
  /// Normalised pixels, float32, height x width x 3 (channel last, same order as `rgb`).
  std::vector<float> pixels;
};

/// All views of one image, in processor order (tiles row-major, then the thumbnail).
struct PreprocessedImage {
  ImageLayout layout;
  std::vector<PreprocessedView> views;
};

/// Preprocesses a decoded RGB image. kInvalidArgument for an empty image or invalid params.
Result<PreprocessedImage> preprocess_lfm2vl(const RgbImage& image,
                                            const Lfm2VlImageParams& params = {});

/// Normalises a uint8 view as transformers does: rescale and normalise fused into
/// (x - mean / rescale) / (std / rescale), each factor rounded to float32 first, one float32
/// subtraction and one float32 division per value. Output height x width x 3.
std::vector<float> normalize_view(const RgbImage& view, const Lfm2VlImageParams& params);

/// Rearranges a height x width x 3 float view into transformers' pixel_values rows:
/// (height/patch * width/patch) patches in raster order, each patch*patch*3 values in
/// (y, x, channel) order. Height and width must be multiples of `patch`.
std::vector<float> patchify(std::span<const float> hwc, int height, int width, int patch);

}  // namespace geniex::vision
