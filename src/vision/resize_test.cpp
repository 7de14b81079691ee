// resize_bilinear_aa beyond the goldens: identity, argument errors, extreme aspect ratios.
// (Bit-exactness against torch is shown by lfm2vl_golden_test.cpp.)
#include "vision/resize.h"

#include <gtest/gtest.h>

namespace geniex::vision {
namespace {

RgbImage ramp(int width, int height) {
  RgbImage img;
  img.width = width;
  img.height = height;
  img.pixels.resize(img.pixel_count() * 3);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(i * 7);
  return img;
}

TEST(ResizeBilinearAa, SameSizeIsACopy) {
  const RgbImage src = ramp(33, 17);
  auto out = resize_bilinear_aa(src, 33, 17);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->pixels, src.pixels);
}

TEST(ResizeBilinearAa, RejectsBadArguments) {
  const RgbImage src = ramp(4, 4);
  EXPECT_EQ(resize_bilinear_aa(src, 0, 4).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resize_bilinear_aa(src, 4, -1).status().code(), StatusCode::kInvalidArgument);
  RgbImage broken = src;
  broken.pixels.pop_back();
  EXPECT_EQ(resize_bilinear_aa(broken, 2, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resize_bilinear_aa(RgbImage{}, 2, 2).status().code(), StatusCode::kInvalidArgument);
}

TEST(ResizeBilinearAa, ExtremeAspectRatios) {
  // A single row shrunk 1000x and a single column stretched: sizes come out right and a
  // one-pixel source upscales to its own colour.
  auto wide = resize_bilinear_aa(ramp(200000, 1), 200, 32);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->width, 200);
  EXPECT_EQ(wide->height, 32);
  EXPECT_EQ(wide->pixels.size(), 200u * 32u * 3u);
  RgbImage dot;
  dot.width = dot.height = 1;
  dot.pixels = {10, 200, 255};
  auto big = resize_bilinear_aa(dot, 64, 48);
  ASSERT_TRUE(big.ok());
  for (size_t i = 0; i < big->pixels.size(); i += 3) {
    ASSERT_EQ(big->pixels[i], 10);
    ASSERT_EQ(big->pixels[i + 1], 200);
    ASSERT_EQ(big->pixels[i + 2], 255);
  }
}

}  // namespace
}  // namespace geniex::vision
