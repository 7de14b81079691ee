// Reference dot products: vec_dot_ref must equal the float dot of the dequantized rows up to
// float rounding (integer accumulation is exact), for every supported weight type.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "quant/quant.h"
#include "quant/quant_test_util.h"
#include "quant/quant_types.h"

namespace geniex::quant {
namespace {

using testing::gaussian;
using testing::random_blocks;
using testing::row_bytes;

const GgmlType kDotTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,    GgmlType::kBF16,   GgmlType::kQ4_0,
    GgmlType::kQ4_1, GgmlType::kQ5_0,   GgmlType::kQ5_1,   GgmlType::kQ8_0,
    GgmlType::kQ2_K, GgmlType::kQ3_K,   GgmlType::kQ4_K,   GgmlType::kQ5_K,
    GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4,
};

std::string type_param_name(const ::testing::TestParamInfo<GgmlType>& info) {
  return std::string(ggml_type_name(info.param));
}

// A weight row of type t: quantized Gaussian data where we have a quantizer, else random
// blocks with finite scales.
std::vector<uint8_t> make_weights(GgmlType t, size_t n, uint32_t seed) {
  if (can_quantize(t)) {
    const auto w = gaussian(n, 0.5f, seed);
    std::vector<uint8_t> q(row_bytes(t, n));
    EXPECT_TRUE(quantize_row(t, w, q).ok());
    return q;
  }
  return random_blocks(t, n / traits(t).block_size, 0.01f, seed);
}

std::vector<float> dequant(GgmlType t, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  EXPECT_TRUE(dequantize_row(t, q, y).ok());
  return y;
}

// Rounding slack of the activation's f16 sum field s (Q8_1): |m_w| * |s_a| * 2^-11 per block.
double q8_1_sum_slack(GgmlType wt, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a) {
  if (vec_dot_type(wt) != GgmlType::kQ8_1) return 0.0;
  const size_t wsize = traits(wt).type_size;
  double slack = 0;
  for (size_t i = 0; i < a.size() / sizeof(BlockQ8_1); ++i) {
    uint16_t m;
    std::memcpy(&m, &w[i * wsize + 2], 2);  // Q4_1 and Q5_1 keep m at offset 2
    BlockQ8_1 b;
    std::memcpy(&b, &a[i * sizeof(b)], sizeof(b));
    slack += std::fabs(fp16_to_fp32(m)) * std::fabs(fp16_to_fp32(b.s)) * (1.0 / 1024);
  }
  return slack;
}

class DotRef : public ::testing::TestWithParam<GgmlType> {};

TEST_P(DotRef, MatchesDequantizedFloatDot) {
  const GgmlType wt = GetParam();
  const GgmlType at = vec_dot_type(wt);
  for (size_t n : {256u, 1024u, 4096u}) {
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const auto w = make_weights(wt, n, seed);
      const auto x = gaussian(n, 1.0f, seed + 100);
      std::vector<uint8_t> a(row_bytes(at, n));
      ASSERT_TRUE(quantize_row(at, x, a).ok());
      const auto wf = dequant(wt, w, n);
      const auto af = dequant(at, a, n);
      double ref = 0, mag = 0;
      for (size_t k = 0; k < n; ++k) {
        ref += static_cast<double>(wf[k]) * af[k];
        mag += std::fabs(static_cast<double>(wf[k]) * af[k]);
      }
      const auto got = vec_dot_ref(wt, w, a, n);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      const double tol = 2e-6 * mag + q8_1_sum_slack(wt, w, a) + 1e-30;
      EXPECT_NEAR(*got, ref, tol) << "n " << n << " seed " << seed;
    }
  }
}

TEST_P(DotRef, F32ConvenienceApproximatesFloatDot) {
  // dot_f32_ref quantizes x itself; the result must equal vec_dot_ref on that quantization and
  // approximate the exact dot of the dequantized weights with the f32 activations.
  const GgmlType wt = GetParam();
  const size_t n = 2048;
  const auto w = make_weights(wt, n, 42);
  const auto x = gaussian(n, 1.0f, 43);
  const auto got = dot_f32_ref(wt, w, x);
  ASSERT_TRUE(got.ok()) << got.status().to_string();

  std::vector<uint8_t> a(row_bytes(vec_dot_type(wt), n));
  ASSERT_TRUE(quantize_row(vec_dot_type(wt), x, a).ok());
  const auto via_act = vec_dot_ref(wt, w, a, n);
  ASSERT_TRUE(via_act.ok());
  EXPECT_EQ(*got, *via_act);

  const auto wf = dequant(wt, w, n);
  double exact = 0, wn = 0, xn = 0;
  for (size_t k = 0; k < n; ++k) {
    exact += static_cast<double>(wf[k]) * x[k];
    wn += static_cast<double>(wf[k]) * wf[k];
    xn += static_cast<double>(x[k]) * x[k];
  }
  // Activation quantization error is at most ~1% of |x| (8-bit) and ~0.4% (bf16).
  EXPECT_NEAR(*got, exact, 0.02 * std::sqrt(wn * xn));
}

TEST_P(DotRef, ZeroWeightsGiveZero) {
  const GgmlType wt = GetParam();
  const size_t n = 512;
  std::vector<uint8_t> w(row_bytes(wt, n), 0);  // all-zero bytes: zero scales everywhere
  const auto x = gaussian(n, 1.0f, 8);
  const auto got = dot_f32_ref(wt, w, x);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 0.0f);
}

TEST_P(DotRef, ZeroActivationsGiveZero) {
  const GgmlType wt = GetParam();
  const size_t n = 512;
  const auto w = make_weights(wt, n, 9);
  const std::vector<float> x(n, 0.0f);
  const auto got = dot_f32_ref(wt, w, x);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(quant, DotRef, ::testing::ValuesIn(kDotTypes), type_param_name);

}  // namespace
}  // namespace geniex::quant
