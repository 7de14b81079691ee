// stb_image (Debian's compiled libstb) and libwebp behind one Result-returning entry point.
// Both libraries report failure with a null pointer; nothing here can abort on bad bytes.
#include "vision/image_decode.h"

#include <stb_image.h>
#include <webp/decode.h>
#include <webp/types.h>

#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include "core/regular_file.h"

namespace geniex::vision {
namespace {

bool starts_with(std::span<const uint8_t> bytes, const char* magic, size_t offset = 0) {
  const size_t n = std::strlen(magic);
  return bytes.size() >= offset + n && std::memcmp(bytes.data() + offset, magic, n) == 0;
}

struct StbFree {
  void operator()(stbi_uc* p) const { stbi_image_free(p); }
};
struct WebpFree {
  void operator()(uint8_t* p) const { WebPFree(p); }
};

// stb's last failure message (a thread-local when stb is compiled as C11 or later); never null.
std::string stb_reason() {
  const char* r = stbi_failure_reason();
  return r != nullptr ? r : "unknown error";
}

Status check_size(int width, int height, const DecodeOptions& options, const char* format) {
  if (width <= 0 || height <= 0) {
    return invalid_argument(std::string("image: ") + format + " has a zero width or height (" +
                            std::to_string(width) + "x" + std::to_string(height) + ")");
  }
  const uint64_t pixels = static_cast<uint64_t>(width) * static_cast<uint64_t>(height);
  if (pixels > options.max_pixels) {
    return invalid_argument(std::string("image: ") + format + " of " + std::to_string(width) + "x" +
                            std::to_string(height) + " = " + std::to_string(pixels) +
                            " pixels is over the limit of " + std::to_string(options.max_pixels));
  }
  return Status::ok_status();
}

RgbImage copy_out(const uint8_t* data, int width, int height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.assign(data, data + image.pixel_count() * 3);
  return image;
}

// stb_image reads past the end of a BMP, GIF or JPEG as zeros and returns a picture; PIL
// refuses such files ("image file is truncated"), so completeness is checked here first.

// A BMP with uncompressed rows (BI_RGB, BI_BITFIELDS) must hold offset + rows * stride bytes.
bool bmp_complete(std::span<const uint8_t> b) {
  if (b.size() < 30) return false;
  auto u32 = [&](size_t at) {
    return uint32_t{b[at]} | (uint32_t{b[at + 1]} << 8) | (uint32_t{b[at + 2]} << 16) |
           (uint32_t{b[at + 3]} << 24);
  };
  const uint32_t header = u32(14);
  if (header < 40 || b.size() < 34) return true;  // OS/2 headers: leave the checks to stb
  const uint64_t offset = u32(10);
  const auto width = static_cast<int32_t>(u32(18));
  const auto height = static_cast<int32_t>(u32(22));
  const uint32_t bpp = uint32_t{b[28]} | (uint32_t{b[29]} << 8);
  const uint32_t compression = u32(30);
  if (compression != 0 && compression != 3) return true;
  const uint64_t w = width < 0 ? 0 - static_cast<int64_t>(width) : width;
  const uint64_t h = height < 0 ? 0 - static_cast<int64_t>(height) : height;
  const uint64_t stride = (w * bpp + 31) / 32 * 4;
  return b.size() >= offset + stride * h;
}

// A GIF's first image must be complete: walk the blocks up to the end of its LZW data.
bool gif_first_frame_complete(std::span<const uint8_t> b) {
  size_t at = 13;
  if (b.size() < at) return false;
  auto skip_table = [&](uint8_t flags) {
    if (flags & 0x80) at += 3u * (1u << ((flags & 7) + 1));
  };
  auto skip_sub_blocks = [&]() {
    while (at < b.size()) {
      const uint8_t n = b[at++];
      if (n == 0) return true;
      at += n;
    }
    return false;
  };
  skip_table(b[10]);
  while (at < b.size()) {
    const uint8_t kind = b[at++];
    if (kind == 0x21) {  // extension: label, then sub-blocks
      if (++at > b.size() || !skip_sub_blocks()) return false;
    } else if (kind == 0x2C) {  // image descriptor, optional local table, LZW code size
      if (at + 9 > b.size()) return false;
      const uint8_t flags = b[at + 8];
      at += 9;
      skip_table(flags);
      ++at;
      return at <= b.size() && skip_sub_blocks();
    } else {
      return false;  // trailer or garbage before any image
    }
  }
  return false;
}

// Markers cannot occur inside entropy-coded data, so a complete JPEG has its last EOI (FF D9)
// after its last SOS (FF DA).
bool jpeg_complete(std::span<const uint8_t> b) {
  size_t last_sos = 0;
  size_t last_eoi = 0;
  for (size_t i = 0; i + 1 < b.size(); ++i) {
    if (b[i] != 0xFF) continue;
    if (b[i + 1] == 0xDA) last_sos = i + 1;
    if (b[i + 1] == 0xD9) last_eoi = i + 1;
  }
  return last_sos != 0 && last_eoi > last_sos;
}

bool complete(std::span<const uint8_t> bytes, ImageFormat format) {
  switch (format) {
    case ImageFormat::kBmp: return bmp_complete(bytes);
    case ImageFormat::kGif: return gif_first_frame_complete(bytes);
    case ImageFormat::kJpeg: return jpeg_complete(bytes);
    default: return true;
  }
}

Result<RgbImage> decode_with_stb(std::span<const uint8_t> bytes, ImageFormat format,
                                 const DecodeOptions& options) {
  const char* name = image_format_name(format);
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return invalid_argument(std::string("image: ") + name + " data over 2 GiB");
  }
  const int len = static_cast<int>(bytes.size());
  int width = 0;
  int height = 0;
  int channels = 0;
  if (stbi_info_from_memory(bytes.data(), len, &width, &height, &channels) == 0) {
    return invalid_argument(std::string("image: cannot read the ") + name +
                            " header: " + stb_reason());
  }
  GENIEX_TRY(check_size(width, height, options, name));
  if (!complete(bytes, format)) {
    return invalid_argument(std::string("image: the ") + name + " data is truncated");
  }
  // Three components requested: stb expands grey to (g, g, g), palettes through the palette
  // and drops alpha without compositing, which is what PIL's convert("RGB") does.
  std::unique_ptr<stbi_uc, StbFree> data(
      stbi_load_from_memory(bytes.data(), len, &width, &height, &channels, 3));
  if (!data) {
    return invalid_argument(std::string("image: cannot decode the ") + name +
                            " data (truncated or corrupt): " + stb_reason());
  }
  GENIEX_TRY(check_size(width, height, options, name));
  return copy_out(data.get(), width, height);
}

Result<RgbImage> decode_webp(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  int width = 0;
  int height = 0;
  if (WebPGetInfo(bytes.data(), bytes.size(), &width, &height) == 0) {
    return invalid_argument("image: cannot read the webp header");
  }
  GENIEX_TRY(check_size(width, height, options, "webp"));
  std::unique_ptr<uint8_t, WebpFree> data(
      WebPDecodeRGB(bytes.data(), bytes.size(), &width, &height));
  if (!data) return invalid_argument("image: cannot decode the webp data (truncated or corrupt)");
  GENIEX_TRY(check_size(width, height, options, "webp"));
  return copy_out(data.get(), width, height);
}

}  // namespace

ImageFormat sniff_image_format(std::span<const uint8_t> bytes) {
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    return ImageFormat::kJpeg;
  }
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return ImageFormat::kGif;
  if (starts_with(bytes, "BM")) return ImageFormat::kBmp;
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "jpeg";
    case ImageFormat::kPng: return "png";
    case ImageFormat::kBmp: return "bmp";
    case ImageFormat::kGif: return "gif";
    case ImageFormat::kWebp: return "webp";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  if (bytes.empty()) return invalid_argument("image: no bytes to decode (empty input)");
  const ImageFormat format = sniff_image_format(bytes);
  switch (format) {
    case ImageFormat::kJpeg:
    case ImageFormat::kPng:
    case ImageFormat::kBmp:
    case ImageFormat::kGif: return decode_with_stb(bytes, format, options);
    case ImageFormat::kWebp: return decode_webp(bytes, options);
    case ImageFormat::kUnknown: break;
  }
  return invalid_argument(
      "image: unknown format (expected JPEG, PNG, BMP, GIF or WebP magic bytes)");
}

Result<RgbImage> decode_image_file(const std::string& path, const DecodeOptions& options) {
  GENIEX_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  GENIEX_ASSIGN_OR_RETURN(std::string bytes, file.read_all(options.max_file_bytes, "image file"));
  auto image = decode_image(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
      options);
  if (!image.ok()) {
    return Status(image.status().code(), path + ": " + image.status().message());
  }
  return image;
}

}  // namespace geniex::vision
