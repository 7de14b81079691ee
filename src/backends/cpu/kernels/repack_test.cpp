// Packed (row-interleaved) kernels vs quant::vec_dot_ref, for every ISA this CPU runs: odd row
// counts (partial last group), 1..70 activation rows, several K (block counts that are not
// multiples of any unroll), padded strides. Same tolerance as vec_dot_test.cpp: integer block
// dots are exact, so |ours - ref| <= 1e-5 * Σ_k |w_k a_k| (float summation order only).
// Kernels that promise the row kernels' results (PackedKernels::same_as_row_kernels: Q8_0x8,
// Q5_0x8, and Q4_Kx8 on NEON levels) are checked bit for bit as well: equal to the row kernels of
// the same ISA (dot_kernels) on the same call (GEMV: every row; Q8_0 / Q5_0 GEMM: rows in whole
// 4-row tiles; Q4_K: every row), and the scalar Q8_0 / Q5_0 kernels equal to the reference. ctest
// also runs this binary with --batch-invariant (the GEMVs then take the GEMM order on both
// sides).
#include "backends/cpu/kernels/repack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::cpu {
namespace {

using quant::testing::gaussian;
using quant::testing::row_bytes;

std::vector<float> dequant(GgmlType t, const uint8_t* p, size_t n) {
  std::vector<float> out(n);
  EXPECT_TRUE(quant::dequantize_row(t, std::span<const uint8_t>(p, row_bytes(t, n)), out).ok());
  return out;
}

void check_packed(GgmlType t, int64_t k, int64_t nr, const std::vector<int64_t>& ncs) {
  const GgmlType at = quant::vec_dot_type(t);
  const size_t wrb = row_bytes(t, static_cast<size_t>(k));
  const size_t ws = wrb + 3;  // padded source stride
  std::vector<uint8_t> w(static_cast<size_t>(nr) * ws, 0xA5);
  for (int64_t i = 0; i < nr; ++i) {
    const auto x = gaussian(static_cast<size_t>(k), 1.0f, 7000 + static_cast<uint32_t>(i));
    ASSERT_TRUE(quant::quantize_row(t, x, {w.data() + i * ws, wrb}).ok());
  }
  std::vector<uint8_t> packed(packed_bytes(t, k, nr), 0x5A);
  const int64_t ngroups = (nr + kPackRows - 1) / kPackRows;
  // Two calls over disjoint group ranges, as threads do.
  repack_groups(t, k, w.data(), ws, nr, 0, ngroups / 2, packed.data());
  repack_groups(t, k, w.data(), ws, nr, ngroups / 2, ngroups, packed.data());

  const int64_t max_nc = ncs.back();
  const size_t arb = row_bytes(at, static_cast<size_t>(k));
  std::vector<std::vector<float>> x(static_cast<size_t>(max_nc));
  std::vector<uint8_t> a_ref(static_cast<size_t>(max_nc) * arb);
  for (int64_t j = 0; j < max_nc; ++j) {
    x[j] = gaussian(static_cast<size_t>(k), 2.0f, 9000 + static_cast<uint32_t>(j));
    ASSERT_TRUE(quant::quantize_row(at, x[j], {a_ref.data() + j * arb, arb}).ok());
  }
  std::vector<float> ref(static_cast<size_t>(max_nc * nr)), tol(ref.size());
  for (int64_t j = 0; j < max_nc; ++j) {
    const auto ad = dequant(at, a_ref.data() + j * arb, static_cast<size_t>(k));
    for (int64_t i = 0; i < nr; ++i) {
      const auto r = quant::vec_dot_ref(t, {w.data() + i * ws, wrb}, {a_ref.data() + j * arb, arb},
                                        static_cast<size_t>(k));
      ASSERT_TRUE(r.ok());
      ref[j * nr + i] = *r;
      const auto wd = dequant(t, w.data() + i * ws, static_cast<size_t>(k));
      double mag = 0.0;
      for (int64_t e = 0; e < k; ++e) mag += std::fabs(double(wd[e]) * double(ad[e]));
      tol[j * nr + i] = static_cast<float>(1e-5 * mag + 1e-30);
    }
  }
  for (Isa isa : available_isas()) {
    const auto pk = packed_kernels(t, isa);
    ASSERT_TRUE(pk.has_value()) << isa_name(isa);
    ASSERT_EQ(pk->act_type, at);
    const size_t pab = pk->act_bytes(k);
    const size_t as = pab + 5;  // padded activation stride
    std::vector<uint8_t> q(arb), a(static_cast<size_t>(max_nc) * as, 0);
    for (int64_t j = 0; j < max_nc; ++j) {
      pk->quantize_act(x[j].data(), q.data(), k);
      ASSERT_TRUE(std::equal(q.begin(), q.end(), a_ref.begin() + j * arb)) << isa_name(isa);
      pk->prepare_act(q.data(), k, a.data() + j * as);
    }
    const int64_t exact_rows = nr / 4 * 4;
    for (int64_t nc : ncs) {
      SCOPED_TRACE(std::string(ggml_type_name(t)) + " k=" + std::to_string(k) +
                   " nr=" + std::to_string(nr) + " nc=" + std::to_string(nc) + " isa " +
                   std::string(isa_name(isa)) + " (kernel " + std::string(isa_name(pk->isa)) + ")");
      const size_t os = static_cast<size_t>(nr) + 2;
      std::vector<float> out(static_cast<size_t>(nc) * os, std::numeric_limits<float>::quiet_NaN());
      pk->gemm(k, packed.data(), nr, a.data(), as, nc, out.data(), os);
      // The row kernels (same ISA) on the same call: every row for a GEMV, rows in whole 4-row
      // tiles for a GEMM or a batch-invariant GEMV (x86 takes the last nr % 4 rows one at a
      // time, in another order).
      std::vector<float> rows_out;
      const bool exact = pk->same_as_row_kernels;
      // Q8_0 / Q5_0 GEMMs: x86 takes the last nr % 4 rows one at a time, in another order. The
      // K-quant row kernels take one weight row at a time for every nc.
      const bool k_quant = t == GgmlType::kQ4_K;
      if (exact) {
        const auto dk = dot_kernels(t, pk->isa);
        ASSERT_TRUE(dk.has_value());
        ASSERT_EQ(dk->isa, pk->isa);
        rows_out.resize(static_cast<size_t>(nc * nr));
        dk->gemm(k, w.data(), ws, nr, a_ref.data(), arb, nc, rows_out.data(),
                 static_cast<size_t>(nr));
      }
      for (int64_t j = 0; j < nc; ++j) {
        for (int64_t i = 0; i < nr; ++i) {
          ASSERT_NEAR(out[j * os + i], ref[j * nr + i], tol[j * nr + i]) << "i=" << i << " j=" << j;
          if (exact && (k_quant || (nc == 1 && !batch_invariant()) || i < exact_rows)) {
            ASSERT_EQ(out[j * os + i], rows_out[j * nr + i]) << "row kernel, i=" << i << " j=" << j;
          }
          if (exact && pk->isa == Isa::kScalar) {
            ASSERT_EQ(out[j * os + i], ref[j * nr + i]) << "reference, i=" << i << " j=" << j;
          }
        }
        for (size_t i = static_cast<size_t>(nr); i < os; ++i) {
          ASSERT_TRUE(std::isnan(out[j * os + i])) << "wrote past nr";
        }
      }
    }
  }
}

// unpack_row gives back each row's original blocks byte for byte (every row, the last group
// partial, two K), and refuses the types it has no unpacking for without touching dst.
TEST(Repack, UnpackRowRestoresTheOriginalBlocks) {
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ8_0}) {
    for (int64_t k : {32, 160}) {
      const int64_t nr = 21;
      const size_t wrb = row_bytes(t, static_cast<size_t>(k));
      std::vector<uint8_t> w(static_cast<size_t>(nr) * wrb);
      for (int64_t i = 0; i < nr; ++i) {
        const auto x = gaussian(static_cast<size_t>(k), 1.0f, 500 + static_cast<uint32_t>(i));
        ASSERT_TRUE(quant::quantize_row(t, x, {w.data() + i * wrb, wrb}).ok());
      }
      std::vector<uint8_t> packed(packed_bytes(t, k, nr));
      repack_groups(t, k, w.data(), wrb, nr, 0, (nr + kPackRows - 1) / kPackRows, packed.data());
      for (int64_t i = 0; i < nr; ++i) {
        std::vector<uint8_t> row(wrb, 0xEE);
        ASSERT_TRUE(unpack_row(t, k, packed.data(), i, row.data()));
        EXPECT_EQ(std::memcmp(row.data(), w.data() + i * wrb, wrb), 0)
            << ggml_type_name(t) << " k " << k << " row " << i;
      }
    }
  }
  std::vector<uint8_t> dst(64, 0xEE);
  const std::vector<uint8_t> packed(packed_bytes(GgmlType::kQ5_0, 32, 8));
  EXPECT_FALSE(unpack_row(GgmlType::kQ5_0, 32, packed.data(), 0, dst.data()));
  EXPECT_FALSE(unpack_row(GgmlType::kQ8_0, 48, packed.data(), 0, dst.data()));  // not blocks
  for (uint8_t v : dst) ASSERT_EQ(v, 0xEE);
}

TEST(Repack, CoversItsTypesOnEveryIsa) {
  EXPECT_TRUE(can_repack(GgmlType::kQ4_0));
  EXPECT_TRUE(can_repack(GgmlType::kQ4_K));
  EXPECT_TRUE(can_repack(GgmlType::kQ8_0));
  EXPECT_TRUE(can_repack(GgmlType::kQ5_0));
  EXPECT_FALSE(can_repack(GgmlType::kQ4_1));
  EXPECT_EQ(packed_group_bytes(GgmlType::kQ8_0, 48), 0u);  // not whole blocks
  EXPECT_EQ(packed_bytes(GgmlType::kQ8_0, 64, 9), 2u * 8u * 2u * 34u);
  EXPECT_EQ(packed_bytes(GgmlType::kQ5_0, 64, 8), 8u * 2u * 22u);
  EXPECT_FALSE(can_repack(GgmlType::kF32));
  EXPECT_FALSE(packed_kernels(GgmlType::kF32).has_value());
  for (GgmlType t :
       {GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ8_0, GgmlType::kQ5_0}) {
    for (Isa isa : available_isas()) {
      const auto pk = packed_kernels(t, isa);
      ASSERT_TRUE(pk.has_value());
      EXPECT_TRUE(isa_available(pk->isa));
      if (isa != Isa::kScalar) {
        EXPECT_NE(pk->isa, Isa::kScalar) << isa_name(isa);
      }
    }
  }
}

std::vector<int64_t> cols_1_to_70() {
  std::vector<int64_t> v;
  for (int64_t c = 1; c <= 70; ++c) v.push_back(c);
  return v;
}

TEST(Repack, Q4_0MatchesVecDotRef) {
  const std::vector<int64_t> few = {1, 2, 3, 5, 9};
  for (int64_t k : {32, 96, 32 * 37, 2048}) {
    for (int64_t nr : {1, 7, 8, 13, 17, 40}) check_packed(GgmlType::kQ4_0, k, nr, few);
  }
  check_packed(GgmlType::kQ4_0, 32 * 11, 19, cols_1_to_70());
  check_packed(GgmlType::kQ4_0, 32 * 1100, 9, {1, 4});  // long rows
}

TEST(Repack, Q6_KMatchesVecDotRef) {
  const std::vector<int64_t> few = {1, 2, 3, 4, 5, 9};
  for (int64_t k : {256, 256 * 3, 2048}) {
    for (int64_t nr : {1, 7, 8, 13, 17, 40}) check_packed(GgmlType::kQ6_K, k, nr, few);
  }
  check_packed(GgmlType::kQ6_K, 256 * 5, 19, cols_1_to_70());
  check_packed(GgmlType::kQ6_K, 256 * 130, 9, {1, 4});  // long rows
}

TEST(Repack, Q4_KMatchesVecDotRefAndTheSimdRowKernels) {
  for (Isa isa : available_isas()) {
    // x86 sums each sub-block in int16 and scales once per super-block (another float order
    // than the row kernel's 8 lane sums); NEON keeps the row kernel's order.
    EXPECT_EQ(packed_kernels(GgmlType::kQ4_K, isa)->same_as_row_kernels, is_neon(isa))
        << isa_name(isa);
    EXPECT_TRUE(packed_kernels(GgmlType::kQ8_0, isa)->same_as_row_kernels) << isa_name(isa);
    EXPECT_TRUE(packed_kernels(GgmlType::kQ5_0, isa)->same_as_row_kernels) << isa_name(isa);
    EXPECT_FALSE(packed_kernels(GgmlType::kQ6_K, isa)->same_as_row_kernels) << isa_name(isa);
  }
  const std::vector<int64_t> few = {1, 2, 3, 4, 5, 9};
  for (int64_t k : {256, 256 * 3, 2048}) {
    for (int64_t nr : {1, 7, 8, 13, 17, 40}) check_packed(GgmlType::kQ4_K, k, nr, few);
  }
  check_packed(GgmlType::kQ4_K, 256 * 5, 19, cols_1_to_70());
  check_packed(GgmlType::kQ4_K, 256 * 130, 9, {1, 4});  // long rows
}

}  // namespace
}  // namespace geniex::cpu

namespace geniex::cpu {
namespace {

TEST(Repack, Q8_0MatchesVecDotRefAndTheRowKernels) {
  const std::vector<int64_t> few = {1, 2, 3, 5, 9};
  for (int64_t k : {32, 96, 32 * 37, 2048}) {
    for (int64_t nr : {1, 7, 8, 13, 17, 40}) check_packed(GgmlType::kQ8_0, k, nr, few);
  }
  check_packed(GgmlType::kQ8_0, 32 * 11, 19, cols_1_to_70());
  check_packed(GgmlType::kQ8_0, 32 * 1100, 9, {1, 4});  // long rows
}

TEST(Repack, Q5_0MatchesVecDotRefAndTheRowKernels) {
  const std::vector<int64_t> few = {1, 2, 3, 5, 9};
  for (int64_t k : {32, 96, 32 * 37, 2048}) {
    for (int64_t nr : {1, 7, 8, 13, 17, 40}) check_packed(GgmlType::kQ5_0, k, nr, few);
  }
  check_packed(GgmlType::kQ5_0, 32 * 11, 19, cols_1_to_70());
  check_packed(GgmlType::kQ5_0, 32 * 1100, 9, {1, 4});  // long rows
}

// Extreme Q8_0 weights (-128 from a foreign quantizer, +127) against full-scale activations:
// the AVX2 sign trick (|-128| = 128 as unsigned) and the VNNI +128 offset must stay exact.
TEST(Repack, Q8_0ExtremeWeightsAreExact) {
  const int64_t k = 64, nr = 8;
  const size_t wrb = 2 * 34;
  std::vector<uint8_t> w(static_cast<size_t>(nr) * wrb);
  for (int64_t i = 0; i < nr; ++i) {
    for (int b = 0; b < 2; ++b) {
      uint8_t* blk = w.data() + i * wrb + 34 * b;
      const uint16_t one = 0x3C00;  // 1.0 in f16
      std::memcpy(blk, &one, 2);
      for (int e = 0; e < 32; ++e) {
        blk[2 + e] = static_cast<uint8_t>((e + i) % 3 == 0 ? 0x80 : (e % 2 ? 127 : 0x81));
      }
    }
  }
  // Activations at full scale (+-127) with d = 1: all sums are small exact integers.
  std::vector<uint8_t> q(row_bytes(GgmlType::kQ8_0, k));
  for (int b = 0; b < 2; ++b) {
    const uint16_t one = 0x3C00;
    std::memcpy(q.data() + 34 * b, &one, 2);
    for (int e = 0; e < 32; ++e) q[34 * b + 2 + e] = static_cast<uint8_t>(e % 5 == 0 ? 127 : 0x81);
  }
  std::vector<uint8_t> packed(packed_bytes(GgmlType::kQ8_0, k, nr));
  repack_groups(GgmlType::kQ8_0, k, w.data(), wrb, nr, 0, 1, packed.data());
  for (Isa isa : available_isas()) {
    const auto pk = packed_kernels(GgmlType::kQ8_0, isa);
    ASSERT_TRUE(pk.has_value());
    std::vector<uint8_t> a(pk->act_bytes(k));
    pk->prepare_act(q.data(), k, a.data());
    float out[nr];
    pk->gemm(k, packed.data(), nr, a.data(), a.size(), 1, out, nr);
    for (int64_t i = 0; i < nr; ++i) {
      const auto r =
          quant::vec_dot_ref(GgmlType::kQ8_0, {w.data() + i * wrb, wrb}, q, static_cast<size_t>(k));
      ASSERT_TRUE(r.ok());
      // Integers below 2^24 times 1.0: every order gives the exact value.
      EXPECT_EQ(out[i], *r) << isa_name(isa) << " row " << i;
    }
  }
}

}  // namespace
}  // namespace geniex::cpu
