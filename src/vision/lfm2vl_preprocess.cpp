// The order of work follows transformers: tiles come from one resize of the original image to
// the whole grid, the thumbnail from a second resize of the original; both in uint8.
#include "vision/lfm2vl_preprocess.h"

#include <algorithm>
#include <cstring>

#include "vision/resize.h"

namespace geniex::vision {
namespace {

RgbImage crop(const RgbImage& src, int x0, int y0, int width, int height) {
  RgbImage out;
  out.width = width;
  out.height = height;
  out.pixels.resize(out.pixel_count() * 3);
  const size_t row = static_cast<size_t>(width) * 3;
  for (int y = 0; y < height; ++y) {
    const uint8_t* in = src.pixels.data() + (static_cast<size_t>(y0 + y) * src.width + x0) * 3;
    std::memcpy(out.pixels.data() + static_cast<size_t>(y) * row, in, row);
  }
  return out;
}

}  // namespace

std::vector<float> normalize_view(const RgbImage& view, const Lfm2VlImageParams& params) {
  // transformers multiplies the float32 mean/std tensors by 1 / rescale_factor (float32
  // result), then torchvision's normalize computes (x - mean) / std in float32.
  const auto inv = static_cast<float>(1.0 / params.rescale_factor);
  float mean[3];
  float std_dev[3];
  for (int c = 0; c < 3; ++c) {
    mean[c] = params.image_mean[c] * inv;
    std_dev[c] = params.image_std[c] * inv;
  }
  std::vector<float> out(view.pixels.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const int c = static_cast<int>(i % 3);
    out[i] = (static_cast<float>(view.pixels[i]) - mean[c]) / std_dev[c];
  }
  return out;
}

std::vector<float> patchify(std::span<const float> hwc, int height, int width, int patch) {
  const int ph = height / patch;
  const int pw = width / patch;
  std::vector<float> out(static_cast<size_t>(ph) * pw * patch * patch * 3);
  size_t k = 0;
  for (int py = 0; py < ph; ++py) {
    for (int px = 0; px < pw; ++px) {
      for (int y = 0; y < patch; ++y) {
        const size_t base = (static_cast<size_t>(py * patch + y) * width + px * patch) * 3;
        std::copy_n(hwc.begin() + static_cast<std::ptrdiff_t>(base), patch * 3,
                    out.begin() + static_cast<std::ptrdiff_t>(k));
        k += static_cast<size_t>(patch) * 3;
      }
    }
  }
  return out;
}

Result<PreprocessedImage> preprocess_lfm2vl(const RgbImage& image,
                                            const Lfm2VlImageParams& params) {
  if (image.width <= 0 || image.height <= 0 || image.pixels.size() != image.pixel_count() * 3) {
    return invalid_argument("lfm2-vl: empty or malformed RGB image");
  }
  GENIEX_ASSIGN_OR_RETURN(ImageLayout layout, plan_image(image.height, image.width, params));
  PreprocessedImage out;
  out.views.reserve(layout.views.size());
  if (layout.tiled) {
    const int t = params.tile_size;
    GENIEX_ASSIGN_OR_RETURN(RgbImage whole,
                            resize_bilinear_aa(image, t * layout.grid.cols, t * layout.grid.rows));
    for (const ViewGeometry& v : layout.views) {
      if (v.is_thumbnail) continue;
      out.views.push_back({v, crop(whole, v.tile_col * t, v.tile_row * t, t, t), {}});
    }
  }
  for (const ViewGeometry& v : layout.views) {
    if (layout.tiled && !v.is_thumbnail) continue;
    GENIEX_ASSIGN_OR_RETURN(RgbImage resized,
                            resize_bilinear_aa(image, v.size.width, v.size.height));
    out.views.push_back({v, std::move(resized), {}});
  }
  for (auto& view : out.views) view.pixels = normalize_view(view.rgb, params);
  out.layout = std::move(layout);
  return out;
}

}  // namespace geniex::vision
