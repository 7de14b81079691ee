// Batch invariance of the matmul kernels: the dot of weight row i with activation row c must not
// depend on how many activation rows the call had. K-quants and floats are invariant always; the
// 32-element block types only with GENIEX_BATCH_INVARIANT=1 (ctest runs this suite a second time
// with it set), otherwise their single-row path sums in another order (differences ~1e-5 relative).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "quant/quant.h"

namespace geniex::cpu {
namespace {

TEST(BatchInvariance, OneRowEqualsTheSameRowInABatch) {
  const bool strict = batch_invariant();
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  const int64_t k = 1024, n = 36, m = 7;  // n not a multiple of the 8-row groups
  for (GgmlType t :
       {GgmlType::kQ8_0, GgmlType::kQ5_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ4_K,
        GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kF16, GgmlType::kF32}) {
    for (Isa isa : {Isa::kScalar, detect_isa()}) {
      auto kr = dot_kernels(t, isa);
      ASSERT_TRUE(kr.has_value()) << ggml_type_name(t);
      const size_t wr = *ggml_row_bytes(t, k), ar = *ggml_row_bytes(kr->act_type, k);
      std::vector<float> wf(static_cast<size_t>(k * n)), xf(static_cast<size_t>(k * m));
      for (auto& v : wf) v = nd(rng);
      for (auto& v : xf) v = nd(rng);
      std::vector<uint8_t> w(wr * n), a(ar * m);
      for (int64_t r = 0; r < n; ++r) {
        ASSERT_TRUE(quant::quantize_row(t, std::span<const float>(wf.data() + r * k, k),
                                        std::span<uint8_t>(w.data() + r * wr, wr))
                        .ok());
      }
      for (int64_t r = 0; r < m; ++r) kr->quantize_act(xf.data() + r * k, a.data() + r * ar, k);
      std::vector<float> one(static_cast<size_t>(n * m)), all(one.size());
      for (int64_t c = 0; c < m; ++c) {
        kr->gemm(k, w.data(), wr, n, a.data() + c * ar, ar, 1, one.data() + c * n, n);
      }
      kr->gemm(k, w.data(), wr, n, a.data(), ar, m, all.data(), n);
      const bool always = t == GgmlType::kQ4_K || t == GgmlType::kQ5_K || t == GgmlType::kQ6_K ||
                          t == GgmlType::kF16 || t == GgmlType::kF32;
      for (size_t i = 0; i < one.size(); ++i) {
        if (strict || always || isa == Isa::kScalar) {
          ASSERT_EQ(one[i], all[i])
              << ggml_type_name(t) << " isa " << static_cast<int>(isa) << " element " << i;
        } else {
          ASSERT_NEAR(one[i], all[i], 1e-4f * (1.0f + std::fabs(all[i]))) << ggml_type_name(t);
        }
      }
    }
  }
}

}  // namespace
}  // namespace geniex::cpu
