// Decoder error handling: every malformed input is a kInvalidArgument (or kNotFound for a
// missing file), never a crash. Pixel exactness per format is checked by the golden test.
#include "vision/image_decode.h"

#include <gtest/gtest.h>

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

void expect_invalid(const std::vector<uint8_t>& bytes, const DecodeOptions& options = {}) {
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
  for (const char* name : {"chelsea.png", "rocket.jpg", "chelsea_palette.gif",
                           "chelsea_lossless.webp", "coffee_crop.bmp"}) {
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
