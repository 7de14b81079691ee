// f32_to_f16_row (F16C / NEON / scalar) against fp32_to_fp16 bit for bit: every exponent with
// mantissas at and around the rounding ties, the subnormal and overflow edges, infinities, NaNs
// with payloads, and lengths that leave SIMD tails.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/fp16.h"

namespace geniex::backends::cpu {
namespace {

std::vector<float> edge_values() {
  std::vector<uint32_t> bits;
  for (uint32_t e = 0; e < 256; ++e) {
    for (uint32_t m : {0x000000u, 0x000001u, 0x000FFFu, 0x001000u, 0x001001u, 0x002000u, 0x003000u,
                       0x7FEFFFu, 0x7FF000u, 0x7FFFFFu, 0x400000u, 0x3FF000u}) {
      bits.push_back(e << 23 | m);
    }
  }
  // Around the f16 overflow (65504 max, 65520 rounds to Inf) and subnormal (2^-24) edges.
  for (uint32_t b : {0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x33000000u, 0x33000001u,
                     0x32FFFFFFu, 0x387FE000u, 0x38800000u, 0x387FFFFFu}) {
    bits.push_back(b);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 4096; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  std::vector<float> v;
  for (uint32_t b : bits) {
    v.push_back(std::bit_cast<float>(b));
    v.push_back(std::bit_cast<float>(b | 0x80000000u));
  }
  return v;
}

TEST(F32ToF16Row, EqualsTheScalarConversionBitForBit) {
  const std::vector<float> x = edge_values();
  for (size_t n : {x.size(), size_t{1}, size_t{7}, size_t{9}, size_t{31}}) {
    for (size_t off : {size_t{0}, size_t{3}}) {
      std::vector<uint16_t> y(n, 0xBEEF);
      f32_to_f16_row(x.data() + off, y.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(y[i], fp32_to_fp16(x[off + i]))
            << "x bits 0x" << std::hex << std::bit_cast<uint32_t>(x[off + i]) << " n " << std::dec
            << n;
      }
    }
  }
}

TEST(F32ToF16Row, WritesExactlyNElements) {
  std::vector<float> x(19, 1.5f);
  std::vector<uint16_t> y(24, 0xBEEF);
  f32_to_f16_row(x.data(), y.data(), 19);
  for (size_t i = 0; i < 19; ++i) EXPECT_EQ(y[i], 0x3E00u);
  for (size_t i = 19; i < 24; ++i) EXPECT_EQ(y[i], 0xBEEFu);
}

}  // namespace
}  // namespace geniex::backends::cpu
