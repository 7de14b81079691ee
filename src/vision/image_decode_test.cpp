// Decoder error handling: every malformed input is a kInvalidArgument (or kNotFound for a
// missing file), never a crash. Pixel exactness per format is checked by the golden test.
#include "vision/image_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace geniex::vision {
namespace {

std::string data_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/data/vision/";
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_invalid(const std::vector<uint8_t>& bytes, const DecodeOptions& options = {},
                    int line = __builtin_LINE()) {
  SCOPED_TRACE(line);
  auto r = decode_image(bytes, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_FALSE(r.status().message().empty());
}

TEST(ImageDecode, SniffsFormats) {
  EXPECT_EQ(sniff_image_format(read_bytes(data_dir() + "chelsea.png")), ImageFormat::kPng);
  EXPECT_EQ(sniff_image_format(read_bytes(data_dir() + "rocket.jpg")), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_image_format(read_bytes(data_dir() + "chelsea_palette.gif")), ImageFormat::kGif);
  EXPECT_EQ(sniff_image_format(read_bytes(data_dir() + "chelsea_lossless.webp")),
            ImageFormat::kWebp);
  EXPECT_EQ(sniff_image_format(read_bytes(data_dir() + "coffee_crop.bmp")), ImageFormat::kBmp);
}

TEST(ImageDecode, EmptyGarbageAndUnknownFormats) {
  expect_invalid({});
  expect_invalid({0x00, 0x01, 0x02});
  expect_invalid(std::vector<uint8_t>(100, 'x'));
  // Formats stb_image knows but we do not accept: PNM ("P6") and TGA-like bytes.
  const std::string pnm = "P6\n2 2\n255\n............";
  expect_invalid(std::vector<uint8_t>(pnm.begin(), pnm.end()));
  // Right magic, nothing after it.
  expect_invalid({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'});
  expect_invalid({0xFF, 0xD8, 0xFF});
  expect_invalid({'G', 'I', 'F', '8', '9', 'a'});
  expect_invalid({'B', 'M'});
  expect_invalid({'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'});
}

TEST(ImageDecode, TruncatedFilesOfEveryFormat) {
  for (const char* name :
       {"chelsea.png", "rocket.jpg", "chelsea_progressive.jpg", "camera_grey.jpg",
        "chelsea_cmyk.jpg", "chelsea_palette.gif", "chelsea_lossless.webp", "coffee_crop.bmp"}) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> bytes = read_bytes(data_dir() + name);
    ASSERT_GT(bytes.size(), 200u);
    ASSERT_TRUE(decode_image(bytes).ok());
    for (size_t keep : {size_t{16}, size_t{40}, bytes.size() / 2}) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
      expect_invalid(cut);
    }
  }
}

TEST(ImageDecode, ZeroSizeHeader) {
  // A BMP header claiming 0 x 4 pixels.
  std::vector<uint8_t> bmp = read_bytes(data_dir() + "coffee_crop.bmp");
  ASSERT_GT(bmp.size(), 26u);
  bmp[18] = bmp[19] = bmp[20] = bmp[21] = 0;  // biWidth = 0
  expect_invalid(bmp);
}

TEST(ImageDecode, PixelLimitIsCheckedBeforeDecoding) {
  const std::vector<uint8_t> png = read_bytes(data_dir() + "chelsea.png");  // 451 x 300
  DecodeOptions options;
  options.max_pixels = 451 * 300 - 1;
  auto r = decode_image(png, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("over the limit"), std::string::npos);
  options.max_pixels = 451 * 300;
  EXPECT_TRUE(decode_image(png, options).ok());
  const std::vector<uint8_t> webp = read_bytes(data_dir() + "chelsea_lossless.webp");
  options.max_pixels = 1000;
  EXPECT_EQ(decode_image(webp, options).status().code(), StatusCode::kInvalidArgument);
}

// JPEG through libjpeg-turbo. Pillow (3.2's libjpeg-turbo behind it) raises "image file is
// truncated" for every one of these cuts, even the one that drops only the EOI marker: the
// entropy decoder reads ahead past the last MCU. libjpeg would pad the data and warn; the decoder
// turns that warning into an error.
TEST(ImageDecode, JpegTruncatedAtTheEnd) {
  for (const char* name : {"rocket.jpg", "chelsea_progressive.jpg", "chelsea_444_progressive.jpg",
                           "coffee_422.jpg", "camera_grey.jpg", "chelsea_cmyk.jpg"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = read_bytes(data_dir() + name);
    ASSERT_TRUE(decode_image(bytes).ok());
    for (size_t cut : {size_t{1}, size_t{2}, size_t{3}, size_t{10}, size_t{100}, size_t{1000}}) {
      SCOPED_TRACE(cut);
      const std::vector<uint8_t> part(bytes.begin(),
                                      bytes.end() - static_cast<std::ptrdiff_t>(cut));
      auto r = decode_image(part);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
    }
    // Cut inside the header (SOI, APPn, tables) at every length up to 700 bytes.
    for (size_t keep = 3; keep < 700; keep += 7) {
      expect_invalid({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)});
    }
  }
}

// Offset of the first SOFn marker's length field (FF Cn, n in 0..2).
size_t find_sof(const std::vector<uint8_t>& b) {
  for (size_t i = 2; i + 9 < b.size(); ++i) {
    if (b[i] == 0xFF && b[i + 1] >= 0xC0 && b[i + 1] <= 0xC2) return i + 2;
  }
  return 0;
}

TEST(ImageDecode, JpegCorruptHeaders) {
  const std::vector<uint8_t> good = read_bytes(data_dir() + "rocket.jpg");
  const size_t sof = find_sof(good);
  ASSERT_GT(sof, 0u);
  auto with = [&](size_t at, uint8_t value) {
    std::vector<uint8_t> b = good;
    b[at] = value;
    return b;
  };
  expect_invalid(with(sof + 2, 12));  // 12-bit samples
  expect_invalid(with(sof + 2, 0));
  std::vector<uint8_t> b = with(sof + 3, 0);  // height 0 (a DNL marker would be needed)
  b[sof + 4] = 0;
  expect_invalid(b);
  b = with(sof + 5, 0);  // width 0
  b[sof + 6] = 0;
  expect_invalid(b);
  expect_invalid(with(sof + 7, 2));  // two components: Pillow refuses them too
  expect_invalid(with(sof + 7, 0));
  expect_invalid(with(sof + 9, 0x00));  // sampling factors 0
  expect_invalid(with(sof + 9, 0x55));  // sampling factors 5
  expect_invalid(with(sof + 10, 9));    // quantisation table 9
  expect_invalid(with(sof - 1, 0xC3));  // lossless JPEG
  // SOI then EOI: no image.
  expect_invalid({0xFF, 0xD8, 0xFF, 0xD9});
  // SOI, then nothing but fill bytes.
  std::vector<uint8_t> fill(4096, 0xFF);
  fill[1] = 0xD8;
  expect_invalid(fill);
}

// Flipped bytes anywhere: every result is an image of the header's size or kInvalidArgument
// (libjpeg recovers from corrupt entropy data with warnings, as in Pillow). Run under ASan.
TEST(ImageDecode, JpegCorruptBytesNeverCrash) {
  for (const char* name : {"rocket.jpg", "chelsea_progressive.jpg", "chelsea_cmyk.jpg"}) {
    SCOPED_TRACE(name);
    const std::vector<uint8_t> good = read_bytes(data_dir() + name);
    const auto base = decode_image(good);
    ASSERT_TRUE(base.ok());
    uint32_t state = 12345;
    auto next = [&]() {
      state = state * 1664525u + 1013904223u;
      return state >> 8;
    };
    int decoded = 0;
    for (int round = 0; round < 60; ++round) {
      std::vector<uint8_t> b = good;
      const int flips = 1 + static_cast<int>(next() % 8);
      for (int f = 0; f < flips; ++f) {
        // Half of the flips in the first 1 KiB (markers and tables), half anywhere.
        const size_t span = (f % 2 == 0) ? std::min<size_t>(1024, b.size()) : b.size();
        b[2 + next() % (span - 2)] ^= static_cast<uint8_t>(1 + next() % 255);
      }
      auto r = decode_image(b);
      if (r.ok()) {
        ++decoded;
        EXPECT_EQ(r->pixels.size(), r->pixel_count() * 3);
      } else {
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
      }
    }
    EXPECT_GT(decoded, 0);
  }
}

// A progressive JPEG whose first scan is repeated 1100 times (libjpeg only warns about the
// bogus progression): refused at the scan limit instead of decoding for ever.
TEST(ImageDecode, JpegScanLimit) {
  const std::vector<uint8_t> good = read_bytes(data_dir() + "chelsea_progressive.jpg");
  size_t sos = 0;
  for (size_t i = 2; i + 1 < good.size() && sos == 0; ++i) {
    if (good[i] == 0xFF && good[i + 1] == 0xDA) sos = i;
  }
  ASSERT_GT(sos, 0u);
  size_t end = sos + 2;
  while (end + 1 < good.size() &&
         !(good[end] == 0xFF && good[end + 1] != 0x00 && (good[end + 1] & 0xF8) != 0xD0)) {
    ++end;
  }
  ASSERT_LT(end + 1, good.size());
  std::vector<uint8_t> bomb(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(sos));
  for (int i = 0; i < 1100; ++i) {
    bomb.insert(bomb.end(), good.begin() + static_cast<std::ptrdiff_t>(sos),
                good.begin() + static_cast<std::ptrdiff_t>(end));
  }
  bomb.insert(bomb.end(), good.begin() + static_cast<std::ptrdiff_t>(end), good.end());
  auto r = decode_image(bomb);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("scans"), std::string::npos) << r.status().message();
}

TEST(ImageDecode, JpegPixelLimitIsCheckedBeforeDecoding) {
  const std::vector<uint8_t> jpeg = read_bytes(data_dir() + "rocket.jpg");  // 640 x 427
  DecodeOptions options;
  options.max_pixels = 640 * 427 - 1;
  auto r = decode_image(jpeg, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over the limit"), std::string::npos);
  options.max_pixels = 640 * 427;
  EXPECT_TRUE(decode_image(jpeg, options).ok());
  // A header claiming 65000 x 65000 with the data of 640 x 427: refused before any allocation.
  std::vector<uint8_t> huge = jpeg;
  const size_t sof = find_sof(huge);
  ASSERT_GT(sof, 0u);
  huge[sof + 3] = huge[sof + 5] = 0xFD;  // 0xFDE8 = 65000
  huge[sof + 4] = huge[sof + 6] = 0xE8;
  r = decode_image(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over the limit"), std::string::npos);
}

TEST(ImageDecode, JpegGreyIsExpandedAndCmykConverted) {
  auto grey = decode_image_file(data_dir() + "camera_grey.jpg");
  ASSERT_TRUE(grey.ok()) << grey.status().to_string();
  EXPECT_EQ(grey->width, 299);
  EXPECT_EQ(grey->height, 247);
  bool all_grey = true;
  for (size_t i = 0; i < grey->pixels.size(); i += 3) {
    all_grey = all_grey && grey->pixels[i] == grey->pixels[i + 1] &&
               grey->pixels[i] == grey->pixels[i + 2];
  }
  EXPECT_TRUE(all_grey);
  auto cmyk = decode_image_file(data_dir() + "chelsea_cmyk.jpg");
  ASSERT_TRUE(cmyk.ok()) << cmyk.status().to_string();
  EXPECT_EQ(cmyk->width, 161);
  EXPECT_EQ(cmyk->height, 121);
}

TEST(ImageDecode, FromPath) {
  auto ok = decode_image_file(data_dir() + "chelsea.png");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->width, 451);
  EXPECT_EQ(ok->height, 300);
  EXPECT_EQ(decode_image_file(data_dir() + "no_such_image.png").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(decode_image_file(data_dir()).status().code(), StatusCode::kInvalidArgument);
  auto bad = decode_image_file(data_dir() + "SOURCES.md");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SOURCES.md"), std::string::npos);
}

}  // namespace
}  // namespace geniex::vision
