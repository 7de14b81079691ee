// Decoding image files into RGB: JPEG through libjpeg-turbo (as Pillow decodes it), PNG, BMP and
// GIF (first frame) through stb_image, WebP through libwebp. Colour conversion follows PIL's
// Image.convert("RGB"), which is what transformers' load_image hands to the LFM2-VL processor (see
// README.md for the exact cases).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "vision/image.h"

namespace geniex::vision {

/// Limits applied while decoding untrusted bytes.
struct DecodeOptions {
  /// Largest accepted width * height; the header is checked before pixels are decoded.
  uint64_t max_pixels = 64ull * 1024 * 1024;
  /// Largest accepted file size for decode_image_file.
  uint64_t max_file_bytes = 256ull * 1024 * 1024;
};

/// The container formats this decoder recognises by their magic bytes.
enum class ImageFormat { kUnknown, kJpeg, kPng, kBmp, kGif, kWebp };

/// The format named by the leading bytes (kUnknown when none matches).
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);

/// Lower-case name of a format ("jpeg", "png", ...).
const char* image_format_name(ImageFormat format);

/// Decodes `bytes` into RGB. kInvalidArgument for empty, unrecognised, truncated or corrupt
/// data, a zero width or height, or more pixels than `options.max_pixels`; never aborts.
Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options = {});

/// Reads `path` (a regular file, at most `options.max_file_bytes`) and decodes it.
Result<RgbImage> decode_image_file(const std::string& path, const DecodeOptions& options = {});

}  // namespace geniex::vision
