// API contract of quant.h: size checks return Status (never crash), unsupported types report
// kUnimplemented with the type's name, capability queries and the vec_dot_type table.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::quant {
namespace {

TEST(quant_api, VecDotTypes) {
  EXPECT_EQ(vec_dot_type(GgmlType::kF32), GgmlType::kF32);
  EXPECT_EQ(vec_dot_type(GgmlType::kF16), GgmlType::kF16);
  EXPECT_EQ(vec_dot_type(GgmlType::kBF16), GgmlType::kBF16);
  for (auto t :
       {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kIQ4_NL, GgmlType::kMXFP4}) {
    EXPECT_EQ(vec_dot_type(t), GgmlType::kQ8_0) << ggml_type_name(t);
  }
  EXPECT_EQ(vec_dot_type(GgmlType::kQ4_1), GgmlType::kQ8_1);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ5_1), GgmlType::kQ8_1);
  for (auto t : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                 GgmlType::kQ6_K, GgmlType::kIQ4_XS}) {
    EXPECT_EQ(vec_dot_type(t), GgmlType::kQ8_K) << ggml_type_name(t);
  }
}

TEST(quant_api, Capabilities) {
  EXPECT_TRUE(can_dequantize(GgmlType::kQ6_K));
  EXPECT_TRUE(can_dequantize(GgmlType::kQ8_K));
  EXPECT_FALSE(can_dequantize(GgmlType::kIQ2_XXS));
  EXPECT_TRUE(can_quantize(GgmlType::kQ8_K));
  EXPECT_TRUE(can_quantize(GgmlType::kIQ4_XS));
  EXPECT_FALSE(can_quantize(GgmlType::kIQ2_XXS));
  EXPECT_TRUE(can_vec_dot(GgmlType::kQ4_K));
  EXPECT_FALSE(can_vec_dot(GgmlType::kQ8_K));
}

TEST(quant_api, UnsupportedTypesNameTheType) {
  std::vector<uint8_t> src(66);
  std::vector<float> dst(256);
  auto st = dequantize_row(GgmlType::kIQ2_XXS, src, dst);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("IQ2_XXS"), std::string::npos) << st.message();

  std::vector<uint8_t> q(136);
  st = quantize_row(GgmlType::kIQ3_S, dst, q);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("IQ3_S"), std::string::npos) << st.message();

  auto r = vec_dot_ref(GgmlType::kTQ1_0, q, q, 256);
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("TQ1_0"), std::string::npos);
  r = dot_f32_ref(GgmlType::kI32, q, dst);
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(quant_api, DequantizeSizeMismatch) {
  std::vector<float> dst(64);
  std::vector<uint8_t> src(2 * 18);
  EXPECT_TRUE(dequantize_row(GgmlType::kQ4_0, src, dst).ok());
  std::vector<uint8_t> short_src(2 * 18 - 1);
  EXPECT_EQ(dequantize_row(GgmlType::kQ4_0, short_src, dst).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> long_src(2 * 18 + 1);
  EXPECT_EQ(dequantize_row(GgmlType::kQ4_0, long_src, dst).code(), StatusCode::kInvalidArgument);
  std::vector<float> odd(63);
  EXPECT_EQ(dequantize_row(GgmlType::kQ4_0, src, odd).code(), StatusCode::kInvalidArgument);
  std::vector<float> k_dst(255);
  std::vector<uint8_t> k_src(144);
  EXPECT_EQ(dequantize_row(GgmlType::kQ4_K, k_src, k_dst).code(), StatusCode::kInvalidArgument);
}

TEST(quant_api, QuantizeSizeMismatch) {
  std::vector<float> src(256, 1.0f);
  std::vector<uint8_t> dst(210);
  EXPECT_TRUE(quantize_row(GgmlType::kQ6_K, src, dst).ok());
  std::vector<uint8_t> small(209);
  EXPECT_EQ(quantize_row(GgmlType::kQ6_K, src, small).code(), StatusCode::kInvalidArgument);
  std::vector<float> odd(100, 1.0f);
  EXPECT_EQ(quantize_row(GgmlType::kQ8_0, odd, dst).code(), StatusCode::kInvalidArgument);
}

TEST(quant_api, DotSizeMismatch) {
  const size_t n = 256;
  std::vector<uint8_t> w(144), a(292);
  EXPECT_TRUE(vec_dot_ref(GgmlType::kQ4_K, w, a, n).ok());
  EXPECT_EQ(vec_dot_ref(GgmlType::kQ4_K, w, a, 128).status().code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> a_wrong(34 * 8);  // Q8_0 bytes instead of Q8_K
  EXPECT_EQ(vec_dot_ref(GgmlType::kQ4_K, w, a_wrong, n).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<uint8_t> w_short(143);
  EXPECT_EQ(vec_dot_ref(GgmlType::kQ4_K, w_short, a, n).status().code(),
            StatusCode::kInvalidArgument);
  // An element count whose byte size wraps around size_t must not alias a small buffer.
  const size_t huge = (std::numeric_limits<size_t>::max() / 256) * 256;
  EXPECT_EQ(vec_dot_ref(GgmlType::kQ4_K, w, a, huge).status().code(), StatusCode::kInvalidArgument);
  std::vector<float> x(100);
  EXPECT_EQ(dot_f32_ref(GgmlType::kQ4_K, w, x).status().code(), StatusCode::kInvalidArgument);
}

TEST(quant_api, EmptyRowsAreFine) {
  std::vector<uint8_t> none;
  std::vector<float> nothing;
  EXPECT_TRUE(dequantize_row(GgmlType::kQ4_K, none, nothing).ok());
  EXPECT_TRUE(quantize_row(GgmlType::kQ8_0, nothing, none).ok());
  const auto r = vec_dot_ref(GgmlType::kQ8_0, none, none, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0.0f);
}

TEST(quant_api, FloatTypesRoundTripExactly) {
  const std::vector<float> x = {1.0f, -2.0f, 0.5f, 65504.0f, 0.0f, -0.0f, 3.0f, 1.0f / 1024};
  for (auto t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    std::vector<uint8_t> q(testing::row_bytes(t, x.size()));
    ASSERT_TRUE(quantize_row(t, x, q).ok());
    std::vector<float> y(x.size());
    ASSERT_TRUE(dequantize_row(t, q, y).ok());
    for (size_t i = 0; i < x.size(); ++i) {
      if (t == GgmlType::kBF16 && i == 3) continue;  // 65504 is not a bf16 value
      EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(x[i]))
          << ggml_type_name(t) << " " << i;
    }
  }
}

}  // namespace
}  // namespace geniex::quant
