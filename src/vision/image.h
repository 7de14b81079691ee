// An 8-bit RGB image in memory: the currency between decoding and preprocessing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace geniex::vision {

/// Interleaved RGB, 3 bytes per pixel, rows top to bottom with no padding
/// (`pixels.size() == width * height * 3`).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;

  /// Number of pixels (width * height).
  [[nodiscard]] size_t pixel_count() const {
    return static_cast<size_t>(width) * static_cast<size_t>(height);
  }
};

}  // namespace geniex::vision
