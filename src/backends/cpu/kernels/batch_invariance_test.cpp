// Batch invariance of the matmul kernels: the dot of weight row i with activation row c must not
// depend on how many activation rows the call had. K-quants and floats are invariant always; the
// 32-element block types only with --batch-invariant (ctest runs this suite a second time
// with it set), otherwise their single-row path sums in another order (differences ~1e-5 relative).
// The packed (repacked-weight) kernels follow the same rule (Q4_0, Q4_K, Q6_K: invariant always;
// Q8_0 / Q5_0: with --batch-invariant), and their Q8_0 / Q5_0 results equal the row
// kernels' in either mode (packing on or off gives the same floats).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/repack.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "quant/quant.h"

namespace geniex::cpu {
namespace {

// The row kernels of `t` at `isa` on random n x k weights and m activation rows: the m rows one
// GEMV at a time (`one`) and as one GEMM (`all`), both n floats per activation row.
struct OneAndAll {
  std::vector<float> one, all;
};
OneAndAll one_row_and_batch(GgmlType t, Isa isa, int64_t k, int64_t n, int64_t m,
                            std::mt19937& rng) {
  std::normal_distribution<float> nd;
  auto kr = dot_kernels(t, isa);
  EXPECT_TRUE(kr.has_value()) << ggml_type_name(t);
  if (!kr) return {};
  const size_t wr = *ggml_row_bytes(t, k), ar = *ggml_row_bytes(kr->act_type, k);
  std::vector<float> wf(static_cast<size_t>(k * n)), xf(static_cast<size_t>(k * m));
  for (auto& v : wf) v = nd(rng);
  for (auto& v : xf) v = nd(rng);
  std::vector<uint8_t> w(wr * n), a(ar * m);
  for (int64_t r = 0; r < n; ++r) {
    EXPECT_TRUE(quant::quantize_row(t, std::span<const float>(wf.data() + r * k, k),
                                    std::span<uint8_t>(w.data() + r * wr, wr))
                    .ok());
  }
  for (int64_t r = 0; r < m; ++r) kr->quantize_act(xf.data() + r * k, a.data() + r * ar, k);
  OneAndAll out;
  out.one.resize(static_cast<size_t>(n * m));
  out.all.resize(out.one.size());
  for (int64_t c = 0; c < m; ++c) {
    kr->gemm(k, w.data(), wr, n, a.data() + c * ar, ar, 1, out.one.data() + c * n, n);
  }
  kr->gemm(k, w.data(), wr, n, a.data(), ar, m, out.all.data(), n);
  return out;
}

TEST(BatchInvariance, OneRowEqualsTheSameRowInABatch) {
  const bool strict = batch_invariant();
  std::mt19937 rng(7);
  // n not a multiple of the 8-row groups; m >= 8: the F16 GEMM with F32-widened weight panels
  const int64_t k = 1024, n = 36, m = 11;
  for (GgmlType t :
       {GgmlType::kQ8_0, GgmlType::kQ5_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ4_K,
        GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kF16, GgmlType::kF32}) {
    for (Isa isa : {Isa::kScalar, detect_isa()}) {
      const auto [one, all] = one_row_and_batch(t, isa, k, n, m, rng);
      ASSERT_FALSE(one.empty());
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

// Float weights with lengths that leave an 8-element step and a scalar tail after the 16-element
// loop: the GEMM tiles (several weight and activation rows per pass) give the GEMV's bits.
TEST(BatchInvariance, FloatOddLengthsOneRowEqualsTheSameRowInABatch) {
  std::mt19937 rng(13);
  const int64_t n = 13, m = 10;  // m >= 8: the x86 F16 GEMM's widened weight panels too
  for (int64_t k : {int64_t{40}, int64_t{1000}, int64_t{1003}, int64_t{7}}) {
    for (GgmlType t : {GgmlType::kF16, GgmlType::kF32}) {
      for (Isa isa : available_isas()) {
        const auto [one, all] = one_row_and_batch(t, isa, k, n, m, rng);
        ASSERT_FALSE(one.empty());
        for (size_t i = 0; i < one.size(); ++i) {
          ASSERT_EQ(one[i], all[i]) << ggml_type_name(t) << " k " << k << " isa "
                                    << static_cast<int>(isa) << " element " << i;
        }
      }
    }
  }
}

TEST(BatchInvariance, PackedOneRowEqualsTheSameRowInABatch) {
  const bool strict = batch_invariant();
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  const int64_t k = 1024, n = 36, m = 11;  // n: a partial last group; m > 8: two column tiles
  for (GgmlType t :
       {GgmlType::kQ8_0, GgmlType::kQ5_0, GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    for (Isa isa : {Isa::kScalar, detect_isa()}) {
      const auto pk = packed_kernels(t, isa);
      const auto kr = dot_kernels(t, isa);
      ASSERT_TRUE(pk.has_value() && kr.has_value()) << ggml_type_name(t);
      const size_t wr = *ggml_row_bytes(t, k), qr = *ggml_row_bytes(pk->act_type, k);
      const size_t ar = pk->act_bytes(k);
      std::vector<float> wf(static_cast<size_t>(k * n)), xf(static_cast<size_t>(k * m));
      for (auto& v : wf) v = nd(rng);
      for (auto& v : xf) v = nd(rng);
      std::vector<uint8_t> w(wr * n), q(qr * m), a(ar * m);
      for (int64_t r = 0; r < n; ++r) {
        ASSERT_TRUE(quant::quantize_row(t, std::span<const float>(wf.data() + r * k, k),
                                        std::span<uint8_t>(w.data() + r * wr, wr))
                        .ok());
      }
      for (int64_t r = 0; r < m; ++r) {
        pk->quantize_act(xf.data() + r * k, q.data() + r * qr, k);
        pk->prepare_act(q.data() + r * qr, k, a.data() + r * ar);
      }
      std::vector<uint8_t> packed(packed_bytes(t, k, n));
      repack_groups(t, k, w.data(), wr, n, 0, (n + kPackRows - 1) / kPackRows, packed.data());
      std::vector<float> one(static_cast<size_t>(n * m)), all(one.size());
      std::vector<float> rows_one(one.size()), rows_all(one.size());
      for (int64_t c = 0; c < m; ++c) {
        pk->gemm(k, packed.data(), n, a.data() + c * ar, ar, 1, one.data() + c * n, n);
        kr->gemm(k, w.data(), wr, n, q.data() + c * qr, qr, 1, rows_one.data() + c * n, n);
      }
      pk->gemm(k, packed.data(), n, a.data(), ar, m, all.data(), n);
      kr->gemm(k, w.data(), wr, n, q.data(), qr, m, rows_all.data(), n);  // n: whole 4-row tiles
      const bool exact = t == GgmlType::kQ8_0 || t == GgmlType::kQ5_0;
      for (size_t i = 0; i < one.size(); ++i) {
        SCOPED_TRACE(std::string(ggml_type_name(t)) + " isa " + std::string(isa_name(isa)) +
                     " element " + std::to_string(i));
        if (strict || !exact || isa == Isa::kScalar) {
          ASSERT_EQ(one[i], all[i]);
        }
        if (exact) {
          ASSERT_EQ(one[i], rows_one[i]) << "GEMV vs row kernels";
          ASSERT_EQ(all[i], rows_all[i]) << "GEMM vs row kernels";
        }
      }
    }
  }
}

}  // namespace
}  // namespace geniex::cpu
