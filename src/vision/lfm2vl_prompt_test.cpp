// Prompt expansion (spec LFM2.md §4.7): marker text and ids for a three-image prompt.
#include "vision/lfm2vl_prompt.h"

#include <gtest/gtest.h>

#include <string>

namespace geniex::vision {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Lfm2VlPrompt, SingleViewHasNoTileMarkers) {
  auto layout = plan_image(256, 384, {});
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(expand_image_text(*layout),
            "<|image_start|>" + repeat("<image>", 96) + "<|image_end|>");
  EXPECT_EQ(expand_image_text(*layout, {.use_image_special_tokens = false}), repeat("<image>", 96));
}

TEST(Lfm2VlPrompt, ThreeImages) {
  Lfm2VlImageParams p;
  auto tiled = plan_image(1024, 1536, p);  // 3 wide x 2 high + thumbnail
  auto single = plan_image(480, 640, p);   // 234 tokens
  p.use_thumbnail = false;
  auto tall = plan_image(3000, 1000, p);  // 1 x 3, no thumbnail
  ASSERT_TRUE(tiled.ok() && single.ok() && tall.ok());

  std::string expected_tiled = "<|image_start|>";
  for (int r = 1; r <= 2; ++r) {
    for (int c = 1; c <= 3; ++c) {
      expected_tiled += "<|img_row_" + std::to_string(r) + "_col_" + std::to_string(c) + "|>" +
                        repeat("<image>", 256);
    }
  }
  expected_tiled += "<|img_thumbnail|>" + repeat("<image>", 247) + "<|image_end|>";
  const std::string expected_single = "<|image_start|>" + repeat("<image>", 234) + "<|image_end|>";
  std::string expected_tall = "<|image_start|>";
  for (int r = 1; r <= 3; ++r) {
    expected_tall += "<|img_row_" + std::to_string(r) + "_col_1|>" + repeat("<image>", 256);
  }
  expected_tall += "<|image_end|>";
  const std::string prompt =
      expand_image_text(*tiled) + "a" + expand_image_text(*single) + expand_image_text(*tall);
  EXPECT_EQ(prompt, expected_tiled + "a" + expected_single + expected_tall);

  auto ids = expand_image_ids(*tiled);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 1u + 6 * 257 + 1 + 247 + 1);
  EXPECT_EQ(ids->front(), 498);
  EXPECT_EQ((*ids)[1], 397);            // row 1 col 1
  EXPECT_EQ((*ids)[1 + 257], 398);      // row 1 col 2
  EXPECT_EQ((*ids)[1 + 3 * 257], 407);  // row 2 col 1
  EXPECT_EQ((*ids)[1 + 6 * 257], 497);  // thumbnail
  EXPECT_EQ((*ids)[2 + 6 * 257], 396);
  EXPECT_EQ(ids->back(), 499);
  auto tall_ids = expand_image_ids(*tall);
  ASSERT_TRUE(tall_ids.ok());
  EXPECT_EQ((*tall_ids)[1 + 2 * 257], 417);  // row 3 col 1
  EXPECT_EQ(tall_ids->size(), 1u + 3 * 257 + 1);
}

TEST(Lfm2VlPrompt, GridsBeyondTheMarkerVocabularyAreRefused) {
  Lfm2VlImageParams p;
  p.max_tiles = 12;
  auto layout = plan_image(32, 20000, p);  // aspect 625: 12 x 1
  ASSERT_TRUE(layout.ok());
  ASSERT_TRUE(layout->tiled);
  EXPECT_EQ(layout->grid.cols, 12);
  EXPECT_EQ(expand_image_ids(*layout).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geniex::vision
