// Reference matmul and embedding for every weight type quant can dot, against dequantize-then-
// double-dot (within the activation-quantization bound) and against quant::dot_f32_ref (exact).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "graph/ref_ops.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::graph {
namespace {

using quant::testing::gaussian;
using quant::testing::random_blocks;

std::vector<GgmlType> dot_types() {
  std::vector<GgmlType> out;
  for (uint32_t id = 0; id < 64; ++id) {
    auto tr = ggml_type_traits(id);
    // Q8_1 / Q8_K are activation-only formats in ggml; they have no weight dot here.
    if (tr && quant::can_vec_dot(tr->type) && quant::can_dequantize(tr->type)) {
      out.push_back(tr->type);
    }
  }
  return out;
}

// K rows-worth of weights of type t: quantized Gaussians when t has a quantizer, else random
// blocks with sane scales.
std::vector<uint8_t> make_weights(GgmlType t, size_t k, size_t n, uint32_t seed) {
  const size_t row = *ggml_row_bytes(t, k);
  if (!quant::can_quantize(t)) return random_blocks(t, n * k / traits(t).block_size, 0.01f, seed);
  std::vector<uint8_t> w(row * n);
  const auto f = gaussian(k * n, 1.0f, seed);
  for (size_t r = 0; r < n; ++r) {
    EXPECT_TRUE(quant::quantize_row(t, std::span<const float>(f).subspan(r * k, k),
                                    std::span<uint8_t>(w).subspan(r * row, row))
                    .ok());
  }
  return w;
}

class RefMatMul : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RefMatMul, MatchesDequantizedDotWithinActivationQuantBound) {
  const GgmlType t = GetParam();
  const int64_t k = 512, n = 5, m = 3;
  const auto w = make_weights(t, size_t(k), size_t(n), 7);
  const auto x = gaussian(size_t(k * m), 1.0f, 8);
  std::vector<float> y(size_t(n * m));
  ASSERT_TRUE(ref::matmul(t, w, k, n, x, m, y).ok());

  const size_t row = *ggml_row_bytes(t, size_t(k));
  const size_t ablock = traits(quant::vec_dot_type(t)).block_size;
  std::vector<float> wf(static_cast<size_t>(k));
  for (int64_t ni = 0; ni < n; ++ni) {
    ASSERT_TRUE(quant::dequantize_row(t, std::span(w).subspan(size_t(ni) * row, row), wf).ok());
    for (int64_t mi = 0; mi < m; ++mi) {
      const float* xr = x.data() + mi * k;
      double exact = 0, bound = 1e-6;
      for (int64_t b = 0; b < k; b += int64_t(ablock)) {
        double amax = 0;
        for (size_t j = 0; j < ablock; ++j)
          amax = std::max(amax, std::fabs(double(xr[b + int64_t(j)])));
        for (size_t j = 0; j < ablock; ++j) {
          const size_t kk = size_t(b) + j;
          exact += double(wf[kk]) * xr[kk];
          // Activation rounding error <= amax/254 for the int8 formats, |x|/256 for BF16.
          bound += std::fabs(double(wf[kk])) * (amax / 127.0 + 1e-6 * std::fabs(double(xr[kk])));
        }
      }
      const float got = y[size_t(mi * n + ni)];
      EXPECT_NEAR(got, exact, bound) << ggml_type_name(t) << " n=" << ni << " m=" << mi;
      // Exactly ggml's per-element scheme, as implemented by quant.
      auto want = quant::dot_f32_ref(t, std::span(w).subspan(size_t(ni) * row, row),
                                     std::span(x).subspan(size_t(mi * k), size_t(k)));
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(got, *want) << ggml_type_name(t);
    }
  }
}

TEST_P(RefMatMul, EmbeddingIsDequantizedRow) {
  const GgmlType t = GetParam();
  const int64_t e = 256, vocab = 6;
  const auto table = make_weights(t, size_t(e), size_t(vocab), 9);
  const std::vector<int32_t> ids = {5, 0, 5, 2};
  std::vector<float> out(size_t(e) * ids.size()), row(static_cast<size_t>(e));
  ASSERT_TRUE(ref::embedding(t, table, e, vocab, ids, out).ok());
  const size_t rb = *ggml_row_bytes(t, size_t(e));
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(
        quant::dequantize_row(t, std::span(table).subspan(size_t(ids[i]) * rb, rb), row).ok());
    for (size_t j = 0; j < row.size(); ++j) ASSERT_EQ(out[i * size_t(e) + j], row[j]);
  }
  const std::vector<int32_t> bad = {6};
  EXPECT_EQ(ref::embedding(t, table, e, vocab, bad, std::span(out).first(size_t(e))).code(),
            StatusCode::kOutOfRange);
}

INSTANTIATE_TEST_SUITE_P(AllDotTypes, RefMatMul, ::testing::ValuesIn(dot_types()),
                         [](const auto& tp) { return std::string(ggml_type_name(tp.param)); });

TEST(RefMatMulShape, F32HandExampleAndSizeErrors) {
  // W = [[1, 2], [3, 4], [5, 6]] as 3 rows of K=2; x = two tokens.
  const std::vector<float> wf = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> w(wf.size() * 4);
  std::memcpy(w.data(), wf.data(), w.size());
  const std::vector<float> x = {1, 1, 2, -1};
  std::vector<float> y(6);
  ASSERT_TRUE(ref::matmul(GgmlType::kF32, w, 2, 3, x, 2, y).ok());
  EXPECT_EQ(y, (std::vector<float>{3, 7, 11, 0, 2, 4}));
  EXPECT_FALSE(ref::matmul(GgmlType::kF32, w, 2, 2, x, 2, y).ok());
  EXPECT_FALSE(ref::matmul(GgmlType::kF32, w, 2, 3, x, 1, y).ok());
  EXPECT_EQ(ref::matmul(GgmlType::kI64, w, 2, 3, x, 2, y).code(), StatusCode::kUnimplemented);
}

TEST(RefMatMulShape, CoversTheModelWeightTypes) {
  const auto types = dot_types();
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ4_0,
                     GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << ggml_type_name(t);
  }
}

}  // namespace
}  // namespace geniex::graph
