// Pcg32 and portable_exp: pinned against the reference PCG and against std::exp.
#include "engine/sampling/rng.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "engine/sampling/portable_exp.h"

namespace geniex::sampling {
namespace {

TEST(Pcg32, MatchesReferenceDemo) {
  // pcg32-demo (pcg-random.org): pcg32_srandom_r(&rng, 42, 54), first six outputs.
  Pcg32 rng(42, 54);
  const uint32_t round1[] = {0xa15c02b7, 0x7b47f409, 0xba1d3330,
                             0x83d2f293, 0xbfa4784b, 0xcbed606e};
  for (const uint32_t want : round1) EXPECT_EQ(rng.next_u32(), want);
  // Re-seeding restarts the stream.
  rng.seed_with(42, 54);
  EXPECT_EQ(rng.next_u32(), 0xa15c02b7u);
}

TEST(Pcg32, UnitDoubleIsInRangeAndUniformish) {
  Pcg32 rng(123);
  double sum = 0.0;
  double lo = 1.0;
  double hi = 0.0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    const double u = rng.next_unit_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_NEAR(sum / kN, 0.5, 0.005);
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1.0 - 1e-3);
}

TEST(Pcg32, UnitDoubleUsesTheDocumentedBits) {
  Pcg32 a(42, 54);
  Pcg32 b(42, 54);
  const uint64_t hi = b.next_u32();
  const uint64_t lo = b.next_u32() >> 11u;
  EXPECT_EQ(a.next_unit_double(), static_cast<double>((hi << 21u) | lo) / 9007199254740992.0);
}

TEST(Pcg32, NextBelowStaysInRangeAndCoversIt) {
  Pcg32 rng(9);
  int seen[7] = {};
  for (int i = 0; i < 7000; ++i) {
    const uint32_t v = rng.next_below(7);
    ASSERT_LT(v, 7u);
    ++seen[v];
  }
  for (const int c : seen) EXPECT_GT(c, 800);
  EXPECT_EQ(rng.next_below(0), 0u);
  EXPECT_EQ(rng.next_below(1), 0u);
}

TEST(PortableExp, CloseToStdExpEverywhere) {
  Pcg32 rng(5);
  double worst = 0.0;
  for (int i = 0; i < 200000; ++i) {
    const double x = -745.0 + 1454.0 * rng.next_unit_double();
    const double want = std::exp(x);
    if (want < std::numeric_limits<double>::min()) continue;  // subnormal: absolute check below
    worst = std::max(worst, std::fabs(portable_exp(x) - want) / want);
  }
  EXPECT_LT(worst, 5e-16);
  for (double x = -30.0; x <= 0.0; x += 0.001) {
    ASSERT_NEAR(portable_exp(x), std::exp(x), 5e-16 * std::exp(x)) << x;
  }
  EXPECT_NEAR(portable_exp(-740.0), std::exp(-740.0), 1e-323);
}

TEST(PortableExp, SpecialValues) {
  EXPECT_EQ(portable_exp(0.0), 1.0);
  EXPECT_EQ(portable_exp(-std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_EQ(portable_exp(-800.0), 0.0);
  EXPECT_EQ(portable_exp(710.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(portable_exp(std::numeric_limits<double>::infinity()),
            std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(portable_exp(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_NEAR(portable_exp(1.0), 2.718281828459045, 1e-15);
}

TEST(PortableExp, PinnedBits) {
  // Same bits on every platform (the aarch64 CI run checks this against x86-64).
  EXPECT_EQ(std::bit_cast<uint64_t>(portable_exp(-1.0)), 0x3fd78b56362cef38ULL);
  EXPECT_EQ(std::bit_cast<uint64_t>(portable_exp(-12.375)), 0x3ed1b64085373070ULL);
  EXPECT_EQ(std::bit_cast<uint64_t>(portable_exp(3.25)), 0x4039ca53b781114aULL);
}

}  // namespace
}  // namespace geniex::sampling
