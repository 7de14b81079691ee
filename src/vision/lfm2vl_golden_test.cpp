// Bit-exactness against transformers 5.23.0 (tests/data/vision/lfm2vl_image_goldens.json, made by
// scripts/goldens/make_lfm2vl_image_goldens.py): for every case and both use_thumbnail values,
// the layout, each view's uint8 pixels, float32 pixels and pixel_values rows (SHA-256), and the
// processor's input_ids of a three-image prompt.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "vision/image_decode.h"
#include "vision/lfm2vl_preprocess.h"
#include "vision/lfm2vl_prompt.h"
#include "vision/sha256_for_tests.h"

namespace geniex::vision {
namespace {

using nlohmann::json;
using testing::sha256_hex;

std::string data_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/data/vision/";
}

const json& goldens() {
  static const json j = [] {
    std::ifstream in(data_dir() + "lfm2vl_image_goldens.json");
    return in ? json::parse(in, nullptr, false) : json();
  }();
  return j;
}

// The exact integer nearest-neighbour derivation the golden script documents.
RgbImage nearest(const RgbImage& src, int width, int height) {
  RgbImage out;
  out.width = width;
  out.height = height;
  out.pixels.resize(out.pixel_count() * 3);
  for (int y = 0; y < height; ++y) {
    const int64_t sy = int64_t{y} * src.height / height;
    for (int x = 0; x < width; ++x) {
      const int64_t sx = int64_t{x} * src.width / width;
      std::memcpy(&out.pixels[(static_cast<size_t>(y) * width + x) * 3],
                  &src.pixels[(static_cast<size_t>(sy) * src.width + sx) * 3], 3);
    }
  }
  return out;
}

std::string float_sha(std::span<const float> v) {
  static_assert(sizeof(float) == 4);
  // The goldens hash little-endian float32; every supported target is little-endian.
  return sha256_hex({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)});
}

RgbImage load_case(const json& c) {
  auto decoded = decode_image_file(data_dir() + c["file"].get<std::string>());
  EXPECT_TRUE(decoded.ok()) << decoded.status().to_string();
  if (!decoded.ok()) return {};
  if (c["derived_size"].is_null()) return *decoded;
  return nearest(*decoded, c["derived_size"][0].get<int>(), c["derived_size"][1].get<int>());
}

TEST(Lfm2VlGolden, FileIsPresent) {
  ASSERT_TRUE(goldens().is_object()) << "cannot read " << data_dir() << "lfm2vl_image_goldens.json";
  EXPECT_EQ(goldens()["versions"]["transformers"], "5.23.0");
  EXPECT_GE(goldens()["cases"].size(), 15u);
}

// Decoding: our RGB equals PIL's convert("RGB") for every format: lossless ones, libwebp, and
// JPEG (baseline, progressive, 4:2:0 / 4:2:2 / 4:4:4, grey, CMYK) through libjpeg-turbo.
TEST(Lfm2VlGolden, DecodedPixelsMatchPil) {
  ASSERT_TRUE(goldens().is_object());
  size_t jpeg_cases = 0;
  for (const json& c : goldens()["cases"]) {
    if (!c["derived_size"].is_null()) continue;
    SCOPED_TRACE(c["name"].get<std::string>());
    const RgbImage img = load_case(c);
    ASSERT_EQ(img.width, c["width"].get<int>());
    ASSERT_EQ(img.height, c["height"].get<int>());
    EXPECT_EQ(sha256_hex(img.pixels), c["decoded_sha256"].get<std::string>());
    if (c["file"].get<std::string>().ends_with(".jpg")) ++jpeg_cases;
  }
  EXPECT_GE(jpeg_cases, 7u);
}

// Everything after decoding, from the exact RGB transformers saw.
TEST(Lfm2VlGolden, EveryViewIsBitIdentical) {
  ASSERT_TRUE(goldens().is_object());
  size_t views = 0;
  size_t values = 0;
  for (const json& c : goldens()["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const RgbImage img = load_case(c);
    ASSERT_EQ(sha256_hex(img.pixels), c["decoded_sha256"].get<std::string>())
        << "decode differs from PIL";
    for (const json& run : c["runs"]) {
      Lfm2VlImageParams params;
      params.use_thumbnail = run["use_thumbnail"].get<bool>();
      SCOPED_TRACE(params.use_thumbnail ? "use_thumbnail" : "no thumbnail");
      auto pre = preprocess_lfm2vl(img, params);
      ASSERT_TRUE(pre.ok()) << pre.status().to_string();
      const ImageLayout& layout = pre->layout;
      EXPECT_EQ(layout.tiled, run["tiled"].get<bool>());
      EXPECT_EQ(layout.grid.rows, run["grid_rows"].get<int>());
      EXPECT_EQ(layout.grid.cols, run["grid_cols"].get<int>());
      EXPECT_EQ(layout.has_thumbnail, run["has_thumbnail"].get<bool>());
      EXPECT_EQ(layout.resized.height, run["resized"][0].get<int>());
      EXPECT_EQ(layout.resized.width, run["resized"][1].get<int>());
      const json& gviews = run["views"];
      ASSERT_EQ(pre->views.size(), gviews.size());
      for (size_t i = 0; i < gviews.size(); ++i) {
        SCOPED_TRACE("view " + std::to_string(i));
        const PreprocessedView& v = pre->views[i];
        const json& g = gviews[i];
        ASSERT_EQ(v.geometry.size.height, g["height"].get<int>());
        ASSERT_EQ(v.geometry.size.width, g["width"].get<int>());
        EXPECT_EQ(v.geometry.patches_h, g["patches_h"].get<int>());
        EXPECT_EQ(v.geometry.patches_w, g["patches_w"].get<int>());
        EXPECT_EQ(v.geometry.tokens, g["tokens"].get<int>());
        EXPECT_EQ(v.geometry.is_thumbnail, g["is_thumbnail"].get<bool>());
        EXPECT_EQ(sha256_hex(v.rgb.pixels), g["uint8_sha256"].get<std::string>());
        EXPECT_EQ(float_sha(v.pixels), g["float32_sha256"].get<std::string>());
        const std::vector<float> rows =
            patchify(v.pixels, v.geometry.size.height, v.geometry.size.width, 16);
        EXPECT_EQ(float_sha(rows), g["pixel_values_sha256"].get<std::string>());
        for (const json& s : g["samples"]) {
          const size_t at = (s[0].get<size_t>() * v.geometry.size.width + s[1].get<size_t>()) * 3 +
                            s[2].get<size_t>();
          EXPECT_EQ(v.pixels[at], s[3].get<float>());
        }
        ++views;
        values += v.pixels.size();
      }
    }
  }
  std::printf("[ golden ] %zu views, %zu float values bit-identical\n", views, values);
  EXPECT_GT(views, 80u);
}

TEST(Lfm2VlGolden, ThreeImagePromptIds) {
  ASSERT_TRUE(goldens().is_object());
  const json& p = goldens()["prompt"];
  std::map<std::string, const json*> by_name;
  for (const json& c : goldens()["cases"]) by_name[c["name"].get<std::string>()] = &c;
  std::vector<ImageLayout> layouts;
  for (const json& name : p["cases"]) {
    const json& c = *by_name.at(name.get<std::string>());
    auto layout = plan_image(c["height"].get<int>(), c["width"].get<int>(), {});
    ASSERT_TRUE(layout.ok());
    layouts.push_back(*layout);
  }
  // "describe <image> and <image><image>" with the tiny tokenizer's word ids.
  const int32_t describe = p["text_ids"]["describe"].get<int32_t>();
  const int32_t and_id = p["text_ids"]["and"].get<int32_t>();
  std::vector<int32_t> ids = {describe};
  auto append = [&](const ImageLayout& l) {
    auto e = expand_image_ids(l);
    ASSERT_TRUE(e.ok());
    ids.insert(ids.end(), e->begin(), e->end());
  };
  append(layouts[0]);
  ids.push_back(and_id);
  append(layouts[1]);
  append(layouts[2]);
  EXPECT_EQ(ids, p["input_ids"].get<std::vector<int32_t>>());
}

}  // namespace
}  // namespace geniex::vision
