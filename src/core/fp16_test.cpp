#include "core/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace geniex {
namespace {

// Every one of the 65536 half values survives half -> float -> half (NaNs stay NaN).
TEST(Fp16, AllHalvesRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    const uint16_t back = fp32_to_fp16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(back))) << h;
    } else {
      EXPECT_EQ(back, h) << "half 0x" << std::hex << h;
    }
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(fp16_to_fp32(0x7C00)));
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);  // rounds up to Inf
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);         // tie to even -> 0
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);         // above the tie
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie to even
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie to even (up)
}

// Rounding of float -> half agrees with the round-to-nearest-even definition on a sweep of
// float bit patterns (checked through the exact neighbours).
TEST(Fp16, RoundToNearestEvenSweep) {
  for (uint32_t bits = 0x33000000u; bits < 0x47800000u; bits += 997) {
    float f;
    std::memcpy(&f, &bits, 4);
    const uint16_t h = fp32_to_fp16(f);
    const float got = fp16_to_fp32(h);
    if (std::isinf(got)) continue;
    const float lo = fp16_to_fp32(static_cast<uint16_t>(h - (h > 0 ? 1 : 0)));
    const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    EXPECT_LE(std::fabs(got - f), std::fabs(lo - f)) << bits;
    EXPECT_LE(std::fabs(got - f), std::fabs(hi - f)) << bits;
  }
}

TEST(Bf16, RoundTripAndRounding) {
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  float tie;
  uint32_t b = 0x3F808000u;  // exactly between 0x3F80 and 0x3F81 -> even (0x3F80)
  std::memcpy(&tie, &b, 4);
  EXPECT_EQ(fp32_to_bf16(tie), 0x3F80);
  b = 0x3F818000u;  // between 0x3F81 and 0x3F82 -> even (0x3F82)
  std::memcpy(&tie, &b, 4);
  EXPECT_EQ(fp32_to_bf16(tie), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace geniex
