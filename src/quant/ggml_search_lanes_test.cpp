// The lane-parallel searches against the scalar ones they replace: the same levels, scales and
// mins bit for bit, on Gaussian, uniform, sparse, constant and all-zero sub-blocks.
#include "quant/ggml_search_lanes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/ggml_search.h"
#include "quant/quant_test_util.h"

namespace geniex::quant::detail {
namespace {

std::vector<float> cases(uint32_t seed) {
  std::vector<float> x = testing::gaussian(256, 1.0f, seed);
  for (size_t i = 0; i < 32; ++i) x[i] = 0.0f;                    // an all-zero sub-block
  for (size_t i = 32; i < 64; ++i) x[i] = 0.5f;                   // a constant one
  for (size_t i = 64; i < 96; ++i) x[i] = -0.25f;                 // a negative constant one
  for (size_t i = 96; i < 128; i += 7) x[i] *= 100.0f;            // outliers
  for (size_t i = 128; i < 160; ++i) x[i] = i % 5 ? 0.0f : x[i];  // sparse
  for (size_t i = 160; i < 192; ++i) x[i] *= 1e-6f;               // tiny
  return x;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(QuantLanes, Qkx2MatchesScalar) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> x = cases(seed);
    std::vector<float> w(256);
    for (size_t i = 0; i < 256; ++i) w[i] = 0.3f + std::fabs(x[i]);
    for (int nmax : {15, 31}) {
      uint8_t l1[256], l2[256], aux[32];
      float m1[8], m2[8], s1[8], s2[8];
      for (int j = 0; j < 8; ++j) {
        s1[j] = make_qkx2_quants(32, nmax, x.data() + 32 * j, w.data() + 32 * j, l1 + 32 * j,
                                 &m1[j], aux, -1.f, 0.1f, 20, false);
      }
      make_qkx2_quants_x8(32, nmax, x.data(), w.data(), l2, m2, s2, -1.f, 0.1f, 20);
      EXPECT_EQ(std::memcmp(l1, l2, sizeof(l1)), 0) << "seed " << seed << " nmax " << nmax;
      for (int j = 0; j < 8; ++j) {
        EXPECT_TRUE(same_bits(s1[j], s2[j])) << seed << " " << j << " " << s1[j] << " " << s2[j];
        EXPECT_TRUE(same_bits(m1[j], m2[j])) << seed << " " << j << " " << m1[j] << " " << m2[j];
      }
    }
  }
}

TEST(QuantLanes, QxMatchesScalar) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> x = cases(seed);
    int8_t l1[256], l2[256];
    float s1[16], s2[16];
    for (int j = 0; j < 16; ++j) {
      s1[j] = make_qx_quants(16, 32, x.data() + 16 * j, l1 + 16 * j, 1, nullptr);
    }
    make_qx_quants_x16(32, x.data(), l2, s2);
    EXPECT_EQ(std::memcmp(l1, l2, sizeof(l1)), 0) << "seed " << seed;
    for (int j = 0; j < 16; ++j) {
      EXPECT_TRUE(same_bits(s1[j], s2[j])) << seed << " " << j << " " << s1[j] << " " << s2[j];
    }
  }
}

}  // namespace
}  // namespace geniex::quant::detail
