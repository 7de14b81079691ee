// The SigLIP2 encoder + LFM2-VL projector graph (reference ops) vs transformers on the tiny
// random-weight LFM2-VL (tests/data/models/tiny-lfm2vl.json): the encoder's post-LN output and
// the projected features of untiled, resized, tiled and very wide images; plus the mmproj
// loader's errors and the host-side pieces (position-table resize, unshuffle order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "models/npy.h"
#include "models/test_util.h"
#include "models/vision_graph.h"
#include "models/vision_model.h"
#include "vision/image_decode.h"
#include "vision/lfm2vl_preprocess.h"

namespace geniex::models {
namespace {

using test::source_dir;

std::string data_dir() { return source_dir() + "/tests/data/models"; }

const nlohmann::json& goldens() {
  static const nlohmann::json j = [] {
    std::ifstream in(data_dir() + "/tiny-lfm2vl.json");
    EXPECT_TRUE(in.good()) << "tiny-lfm2vl.json";
    return nlohmann::json::parse(in);
  }();
  return j;
}

struct Mmproj {
  gguf::GgufFile file;
  VisionConfig config;
  VisionWeights weights;
};

const Mmproj& mmproj() {
  static const Mmproj m = [] {
    auto f = gguf::GgufFile::open(data_dir() + "/mmproj-tiny-lfm2vl-f32.gguf");
    EXPECT_TRUE(f.ok()) << f.status().message();
    Mmproj out{std::move(*f), {}, {}};
    auto c = load_vision_config(out.file);
    EXPECT_TRUE(c.ok()) << c.status().message();
    out.config = *c;
    auto w = bind_vision_weights(out.file, out.config);
    EXPECT_TRUE(w.ok()) << w.status().message();
    out.weights = *w;
    return out;
  }();
  return m;
}

// The golden script's exact integer nearest-neighbour derivation.
vision::RgbImage nearest(const vision::RgbImage& src, int width, int height) {
  vision::RgbImage out;
  out.width = width;
  out.height = height;
  out.pixels.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    const int sy = static_cast<int>(static_cast<int64_t>(y) * src.height / height);
    for (int x = 0; x < width; ++x) {
      const int sx = static_cast<int>(static_cast<int64_t>(x) * src.width / width);
      for (int c = 0; c < 3; ++c)
        out.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
            src.pixels[(static_cast<size_t>(sy) * src.width + sx) * 3 + c];
    }
  }
  return out;
}

vision::RgbImage case_image(const nlohmann::json& img) {
  auto rgb = vision::decode_image_file(source_dir() + "/tests/data/vision/" +
                                       img["file"].get<std::string>());
  EXPECT_TRUE(rgb.ok()) << rgb.status().message();
  if (!rgb.ok()) return {};
  if (img.contains("derived_size_wh") && !img["derived_size_wh"].is_null())
    return nearest(*rgb, img["derived_size_wh"][0].get<int>(),
                   img["derived_size_wh"][1].get<int>());
  return std::move(*rgb);
}

// max |a - b| over max |b|.
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(VisionConfig, ReadsTheTinyMmproj) {
  const VisionConfig& c = mmproj().config;
  EXPECT_EQ(c.projector_type, "lfm2");
  EXPECT_EQ(c.n_embd, 32u);
  EXPECT_EQ(c.n_ff, 64u);
  EXPECT_EQ(c.n_head, 2u);
  EXPECT_EQ(c.n_layer, 3u);
  EXPECT_EQ(c.patch_size, 16u);
  EXPECT_EQ(c.n_pos_side, 16u);
  EXPECT_EQ(c.n_embd_text, 64u);
  EXPECT_EQ(c.scale_factor, 2u);
  EXPECT_NE(mmproj().weights.mm_norm_w, nullptr);
}

TEST(VisionConfig, RefusesATextModelAsMmproj) {
  auto f = gguf::GgufFile::open(data_dir() + "/tiny-lfm2vl-f32.gguf");
  ASSERT_TRUE(f.ok());
  auto c = load_vision_config(*f);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("\"lfm2\", expected \"clip\""), std::string::npos)
      << c.status().message();
}

TEST(VisionGraph, UnshuffleOrderMatchesTransformers) {
  // 4 x 6 patches, factor 2: token (0, 1) = patches (0,2) (0,3) (1,2) (1,3).
  const std::vector<int32_t> idx = unshuffle_rows(4, 6, 2);
  ASSERT_EQ(idx.size(), 24u);
  EXPECT_EQ(std::vector<int32_t>(idx.begin() + 4, idx.begin() + 8),
            (std::vector<int32_t>{2, 3, 8, 9}));
  EXPECT_EQ(std::vector<int32_t>(idx.begin() + 12, idx.begin() + 16),
            (std::vector<int32_t>{12, 13, 18, 19}));
}

TEST(VisionGraph, RefusesOddPatchGrids) {
  EXPECT_FALSE(build_vision_graph(mmproj().config, mmproj().weights, 3, 4).ok());
  EXPECT_FALSE(build_vision_graph(mmproj().config, mmproj().weights, 0, 4).ok());
}

TEST(VisionGraph, PositionTableUnchangedAt16x16AndAveragedWhenShrunk) {
  const gguf::TensorInfo& t = *mmproj().weights.pos;
  auto same = resize_position_table(t, 16, 16, 16);
  ASSERT_TRUE(same.ok());
  const auto* raw = reinterpret_cast<const float*>(t.data.data());
  EXPECT_TRUE(std::equal(same->begin(), same->end(), raw));
  // 16 -> 8 columns, rows unchanged: the antialiased triangle of support 2 centred on 2x + 1
  // covers columns 2x - 1 .. 2x + 2 with weights 1:3:3:1 (output column 1: columns 1..4).
  auto half = resize_position_table(t, 16, 16, 8);
  ASSERT_TRUE(half.ok());
  const size_t e = t.ne[0];
  for (size_t c = 0; c < e; ++c) {
    const double want = (raw[1 * e + c] * 1.0 + raw[2 * e + c] * 3.0 + raw[3 * e + c] * 3.0 +
                         raw[4 * e + c] * 1.0) /
                        8.0;
    EXPECT_NEAR((*half)[1 * e + c], want, 1e-6) << c;
  }
}

class VisionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionGolden, FeaturesMatchTransformers) {
  const nlohmann::json& cs = goldens()["cases"][GetParam()];
  std::vector<float> all;
  for (const auto& img : cs["images"]) {
    const vision::RgbImage rgb = case_image(img);
    auto pre = vision::preprocess_lfm2vl(rgb, vision::Lfm2VlImageParams{});
    ASSERT_TRUE(pre.ok()) << pre.status().message();
    for (const auto& view : pre->views) {
      auto f = run_vision_reference(mmproj().config, mmproj().weights, view.pixels,
                                    view.geometry.size.height, view.geometry.size.width);
      ASSERT_TRUE(f.ok()) << f.status().message();
      all.insert(all.end(), f->begin(), f->end());
    }
  }
  auto golden = read_npy(data_dir() + "/tiny-lfm2vl/" + GetParam() + ".features.npy");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  ASSERT_EQ(all.size(), golden->data.size());
  EXPECT_LT(rel_err(all, golden->data), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Cases, VisionGolden,
                         ::testing::Values("small", "resized", "tiled", "wide", "three"));

}  // namespace
}  // namespace geniex::models
