// Fuzzes image decoding and LFM2-VL preprocessing: any bytes must decode or fail with a
// Status, and whatever decodes must preprocess into views whose sizes, pixels and prompt
// expansion agree with the layout. Byte 0 picks the processor parameters: transformers'
// defaults, or a scaled-down set (64-pixel tiles, 1..4 tokens) that reaches tiling with the
// small images a fuzzer makes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "vision/image_decode.h"
#include "vision/lfm2vl_preprocess.h"
#include "vision/lfm2vl_prompt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geniex::vision;
  if (size < 1) return 0;
  Lfm2VlImageParams params;
  if ((data[0] & 1) != 0) {
    params.tile_size = 64;
    params.min_image_tokens = 1;
    params.max_image_tokens = 4;
    params.use_thumbnail = (data[0] & 2) != 0;
  }
  DecodeOptions options;
  options.max_pixels = 512 * 512;  // keeps one run fast; the limit itself is under test too
  auto image = decode_image(std::span<const uint8_t>(data + 1, size - 1), options);
  if (!image.ok()) return 0;
  if (image->width <= 0 || image->height <= 0 || image->pixel_count() > options.max_pixels ||
      image->pixels.size() != image->pixel_count() * 3) {
    std::abort();
  }
  auto pre = preprocess_lfm2vl(*image, params);
  if (!pre.ok()) std::abort();  // a decoded image always preprocesses
  const ImageLayout& layout = pre->layout;
  if (pre->views.size() != layout.views.size() || pre->views.empty()) std::abort();
  int tokens = 0;
  for (const PreprocessedView& v : pre->views) {
    const ImageSize s = v.geometry.size;
    if (s.height % params.encoder_patch_size != 0 || s.width % params.encoder_patch_size != 0 ||
        v.rgb.width != s.width || v.rgb.height != s.height ||
        v.pixels.size() != v.rgb.pixels.size()) {
      std::abort();
    }
    for (float f : v.pixels) {
      if (!(f >= -1.0f && f <= 1.0f)) std::abort();  // mean = std = 0.5 keeps [-1, 1]
    }
    tokens += v.geometry.tokens;
  }
  if (tokens != layout.total_tokens) std::abort();
  auto ids = expand_image_ids(layout);
  if (!ids.ok()) return 0;
  const size_t markers = 2 + (layout.views.size() > 1 ? layout.views.size() : 0);
  if (ids->size() != static_cast<size_t>(tokens) + markers) std::abort();
  return 0;
}
