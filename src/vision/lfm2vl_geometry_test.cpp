// Geometry edge cases of spec LFM2.md §4.2-4.5 (the numbers EXP verified against transformers).
#include "vision/lfm2vl_geometry.h"

#include <gtest/gtest.h>

namespace geniex::vision {
namespace {

TEST(Lfm2VlGeometry, SmartResizeRoundsHalfToEven) {
  const Lfm2VlImageParams p;
  // 336 / 32 = 10.5 -> 10 and 400 / 32 = 12.5 -> 12 (half away from zero would give 11, 13).
  EXPECT_EQ(smart_resize(336, 400, p), (ImageSize{320, 384}));
  EXPECT_EQ(smart_resize(100, 2000, p), (ImageSize{96, 1984}));
  EXPECT_EQ(smart_resize(256, 384, p), (ImageSize{256, 384}));
  EXPECT_EQ(smart_resize(480, 640, p), (ImageSize{416, 576}));
}

TEST(Lfm2VlGeometry, SmartResizeKeepsTheTokenBudget) {
  const Lfm2VlImageParams p;
  EXPECT_EQ(smart_resize(1024, 1536, p), (ImageSize{416, 608}));  // over max: shrink
  EXPECT_EQ(smart_resize(3000, 1000, p), (ImageSize{864, 288}));
  const ImageSize tiny = smart_resize(10, 10, p);  // under min: grow to >= 64 tokens
  EXPECT_EQ(tiny, (ImageSize{256, 256}));
  const ImageSize one = smart_resize(1, 1, p);
  EXPECT_EQ(one.height % 32, 0);
  EXPECT_GE(one.height * one.width, 64 * 1024);
  // An extreme aspect ratio never goes below one 32-pixel row.
  EXPECT_EQ(smart_resize(1, 20000, p).height, 32);
}

TEST(Lfm2VlGeometry, TileDecisionAt720And721) {
  const Lfm2VlImageParams p;
  EXPECT_FALSE(is_image_too_large(720, 720, p));
  EXPECT_TRUE(is_image_too_large(721, 721, p));
  auto small = plan_image(720, 720, p);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->tiled);
  EXPECT_EQ(small->views.size(), 1u);
  auto big = plan_image(721, 721, p);
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(big->tiled);
  EXPECT_EQ(big->grid, (TileGrid{2, 2}));
}

TEST(Lfm2VlGeometry, GridChoiceAndTieRule) {
  const Lfm2VlImageParams p;
  EXPECT_EQ(choose_grid(977, 1024, p), (TileGrid{2, 2}));  // 2x2 ties 3x3; area too small
  EXPECT_EQ(choose_grid(1024, 1536, p), (TileGrid{3, 2}));
  EXPECT_EQ(choose_grid(3000, 1000, p), (TileGrid{1, 3}));
  // A square image covering more than half of 3x3 tiles takes the later, bigger grid.
  EXPECT_EQ(choose_grid(1100, 1100, p), (TileGrid{3, 3}));
  EXPECT_EQ(choose_grid(100, 2000, p), (TileGrid{10, 1}));
}

TEST(Lfm2VlGeometry, LayoutsOfTheSpecExamples) {
  Lfm2VlImageParams p;
  auto a = plan_image(1024, 1536, p);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->views.size(), 7u);
  EXPECT_TRUE(a->has_thumbnail);
  EXPECT_EQ(a->views[1].tile_row, 0);
  EXPECT_EQ(a->views[1].tile_col, 1);
  EXPECT_EQ(a->views[3].tile_row, 1);
  EXPECT_EQ(a->views[3].tile_col, 0);
  EXPECT_EQ(a->views[0].tokens, 256);
  EXPECT_EQ(a->views[6].tokens, 247);
  EXPECT_TRUE(a->views[6].is_thumbnail);
  EXPECT_EQ(a->total_tokens, 6 * 256 + 247);

  auto b = plan_image(3000, 1000, p);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->views.size(), 4u);
  EXPECT_EQ(b->views.back().tokens, 243);

  auto c = plan_image(480, 640, p);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->views[0].tokens, 234);
  EXPECT_EQ(c->views[0].patches_h, 26);
  EXPECT_EQ(c->views[0].patches_w, 36);

  auto d = plan_image(256, 384, p);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->total_tokens, 96);

  p.use_thumbnail = false;
  auto e = plan_image(1024, 1536, p);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->views.size(), 6u);
  EXPECT_FALSE(e->has_thumbnail);

  p.do_image_splitting = false;
  auto f = plan_image(1024, 1536, p);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->tiled);
  EXPECT_EQ(f->views[0].size, (ImageSize{416, 608}));
}

TEST(Lfm2VlGeometry, RejectsBadInput) {
  Lfm2VlImageParams p;
  EXPECT_EQ(plan_image(0, 10, p).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan_image(10, -1, p).status().code(), StatusCode::kInvalidArgument);
  p.min_tiles = 5;
  p.max_tiles = 4;
  EXPECT_EQ(plan_image(10, 10, p).status().code(), StatusCode::kInvalidArgument);
  p = {};
  p.image_std[1] = 0.0f;
  EXPECT_EQ(validate(p).code(), StatusCode::kInvalidArgument);
  p = {};
  p.encoder_patch_size = 0;
  EXPECT_EQ(validate(p).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(validate(Lfm2VlImageParams{}).ok());
}

}  // namespace
}  // namespace geniex::vision
