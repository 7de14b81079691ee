// libjpeg-turbo (JPEG), stb_image (Debian's compiled libstb: PNG, BMP, GIF) and libwebp behind
// one Result-returning entry point. stb and libwebp report failure with a null pointer;
// libjpeg's errors come back through setjmp/longjmp (see decode_jpeg). Nothing here can abort
// on bad bytes.
#include "vision/image_decode.h"

// jpeglib.h needs FILE and size_t declared before it.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <stb_image.h>
#include <webp/decode.h>
#include <webp/types.h>

#include <algorithm>
#include <climits>
#include <csetjmp>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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

// stb_image reads past the end of a BMP or GIF as zeros and returns a picture; PIL refuses such
// files ("image file is truncated"), so completeness is checked here first.

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

bool complete(std::span<const uint8_t> bytes, ImageFormat format) {
  switch (format) {
    case ImageFormat::kBmp: return bmp_complete(bytes);
    case ImageFormat::kGif: return gif_first_frame_complete(bytes);
    default: return true;
  }
}

// ---------------------------------------------------------------------------------------------
// JPEG through libjpeg-turbo, set up as Pillow's JpegDecoder sets it up for Image.open(f): the
// library's defaults (JDCT_ISLOW, fancy upsampling, no scaling), the colour space libjpeg reads
// from the markers, and the output colour space by component count: 1 → JCS_GRAYSCALE (PIL mode
// L), 3 → JCS_RGB (YCbCr converted by libjpeg, RGB passed through), 4 → JCS_CMYK (YCCK converted
// by libjpeg; Pillow takes the bytes as Adobe-inverted "CMYK;I"). convert("RGB") then gives
// (g, g, g) for L and Pillow's cmyk2rgb for CMYK, repeated here.
//
// libjpeg reports a fatal error by calling error_exit, which must not return: ours longjmps back
// to the setjmp of the phase function that called into libjpeg. Those phase functions hold only
// trivially destructible locals (longjmp skips destructors); the libjpeg state lives in a
// JpegSession owned by decode_jpeg, whose destructor frees it on every path.

constexpr int kMaxJpegScans = 1000;  // more scans than any encoder writes: a progressive bomb

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg hands cinfo->err back as a jpeg_error_mgr*
  std::jmp_buf jump;
  bool hit_eof;  // JWRN_JPEG_EOF: the data ended and libjpeg padded it with a fake EOI
  char message[JMSG_LENGTH_MAX + 64];
};

struct JpegSession {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  jpeg_progress_mgr progress;
  bool eof_before_last_row;
};

struct JpegSessionOwner {
  JpegSession s;
  JpegSessionOwner() { std::memset(&s, 0, sizeof(s)); }
  JpegSessionOwner(const JpegSessionOwner&) = delete;
  JpegSessionOwner& operator=(const JpegSessionOwner&) = delete;
  // jpeg_destroy_decompress is a no-op until jpeg_create_decompress set cinfo.mem.
  ~JpegSessionOwner() { jpeg_destroy_decompress(&s.cinfo); }
};

JpegErrorManager* jpeg_errors(j_common_ptr cinfo) {
  return reinterpret_cast<JpegErrorManager*>(cinfo->err);
}

void jpeg_on_error(j_common_ptr cinfo) {
  JpegErrorManager* err = jpeg_errors(cinfo);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (corrupt entropy data and the like) are ignored as Pillow ignores them, except the
// end of the data: Pillow raises "image file is truncated" there.
void jpeg_on_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;  // trace messages
  ++cinfo->err->num_warnings;
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_errors(cinfo)->hit_eof = true;
}

void jpeg_on_progress(j_common_ptr cinfo) {
  if (cinfo->is_decompressor == 0) return;
  const int scans = reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number;
  if (scans > kMaxJpegScans) {
    JpegErrorManager* err = jpeg_errors(cinfo);
    std::snprintf(err->message, sizeof(err->message), "more than %d scans", kMaxJpegScans);
    std::longjmp(err->jump, 1);
  }
}

// Phase 1: the markers up to the first scan. False: s->err.message says why.
bool jpeg_read_header_phase(JpegSession* s, const uint8_t* data, size_t size) {
  s->cinfo.err = jpeg_std_error(&s->err.pub);
  s->err.pub.error_exit = jpeg_on_error;
  s->err.pub.emit_message = jpeg_on_message;
  if (setjmp(s->err.jump) != 0) return false;
  jpeg_create_decompress(&s->cinfo);
  s->progress.progress_monitor = jpeg_on_progress;
  s->cinfo.progress = &s->progress;
  jpeg_mem_src(&s->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&s->cinfo, TRUE);
  return true;
}

// Pillow's CMYK;I unpacking (bytes inverted) followed by its cmyk2rgb, in integers.
void cmyk_row_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t width) {
  for (size_t x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int nk = cmyk[3];  // 255 - (255 - K)
    for (int ch = 0; ch < 3; ++ch) {
      const int c = 255 - cmyk[ch];
      const int t = c * nk + 128;
      const int muldiv255 = ((t >> 8) + t) >> 8;
      rgb[ch] = static_cast<uint8_t>(std::clamp(nk - muldiv255, 0, 255));
    }
  }
}

// Phase 2: all pixels into `rgb` (width * height * 3 bytes); `scratch` holds one row of width *
// 4 bytes for grey and CMYK. False: s->err.message says why.
bool jpeg_decode_phase(JpegSession* s, uint8_t* rgb, uint8_t* scratch) {
  if (setjmp(s->err.jump) != 0) return false;
  const JDIMENSION width = s->cinfo.image_width;
  const JDIMENSION height = s->cinfo.image_height;
  const int components = s->cinfo.out_color_space == JCS_GRAYSCALE ? 1
                         : s->cinfo.out_color_space == JCS_CMYK    ? 4
                                                                   : 3;
  jpeg_start_decompress(&s->cinfo);
  if (s->cinfo.output_width != width || s->cinfo.output_height != height ||
      s->cinfo.output_components != components) {
    std::snprintf(s->err.message, sizeof(s->err.message), "unexpected output geometry");
    return false;
  }
  while (s->cinfo.output_scanline < height) {
    uint8_t* row = rgb + static_cast<size_t>(s->cinfo.output_scanline) * width * 3;
    JSAMPROW target = components == 3 ? row : scratch;
    if (jpeg_read_scanlines(&s->cinfo, &target, 1) != 1) {
      std::snprintf(s->err.message, sizeof(s->err.message), "no scanline returned");
      return false;
    }
    if (components == 1) {
      for (JDIMENSION x = 0; x < width; ++x) {
        row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = scratch[x];
      }
    } else if (components == 4) {
      cmyk_row_to_rgb(scratch, row, width);
    }
  }
  // Pillow has all rows at this point and ignores a missing EOI; it reports errors only.
  s->eof_before_last_row = s->err.hit_eof;
  jpeg_finish_decompress(&s->cinfo);
  return true;
}

Result<RgbImage> decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& options) {
  JpegSessionOwner owner;
  JpegSession* s = &owner.s;
  auto failure = [&](const char* what) {
    if (s->err.hit_eof) {
      return invalid_argument(std::string("image: the jpeg data is truncated (") + s->err.message +
                              ")");
    }
    return invalid_argument(std::string("image: ") + what + ": " + s->err.message);
  };
  if (!jpeg_read_header_phase(s, bytes.data(), bytes.size())) {
    return failure("cannot read the jpeg header");
  }
  if (s->err.hit_eof) return invalid_argument("image: the jpeg data is truncated (in the header)");
  switch (s->cinfo.num_components) {
    case 1: s->cinfo.out_color_space = JCS_GRAYSCALE; break;
    case 3: s->cinfo.out_color_space = JCS_RGB; break;
    case 4: s->cinfo.out_color_space = JCS_CMYK; break;
    default:
      return invalid_argument("image: jpeg with " + std::to_string(s->cinfo.num_components) +
                              " components (1, 3 or 4 are decoded)");
  }
  const JDIMENSION width = s->cinfo.image_width;
  const JDIMENSION height = s->cinfo.image_height;
  if (width > static_cast<JDIMENSION>(INT_MAX) || height > static_cast<JDIMENSION>(INT_MAX)) {
    return invalid_argument("image: jpeg dimensions out of range");
  }
  GENIEX_TRY(check_size(static_cast<int>(width), static_cast<int>(height), options, "jpeg"));
  RgbImage image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.pixels.resize(image.pixel_count() * 3);
  std::vector<uint8_t> scratch(static_cast<size_t>(width) * 4);
  if (!jpeg_decode_phase(s, image.pixels.data(), scratch.data())) {
    return failure("cannot decode the jpeg data");
  }
  if (s->eof_before_last_row) {
    return invalid_argument("image: the jpeg data is truncated (premature end of the file)");
  }
  return image;
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
    case ImageFormat::kJpeg: return decode_jpeg(bytes, options);
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
