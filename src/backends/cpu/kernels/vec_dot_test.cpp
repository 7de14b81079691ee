// Kernels vs the quant reference, for every ISA this CPU runs and every weight type each reports.
//
// Tolerance: integer block sums are exact in every kernel, so ours and quant::vec_dot_ref differ
// only in float rounding: products/scales rounded (or fused) differently and partial sums added
// in another order (SIMD lanes, two accumulators, FMA). For k float additions the classic bound
// is |err| <= ~k * u * Σ|terms| (u = 2^-24); these rounding errors behave like a random walk,
// ~sqrt(k) * u * Σ|terms|, i.e. ~1e-6 relative to Σ|terms| for the largest k here (a few hundred
// per lane for the 2053-element float rows). We assert
//     |ours - ref| <= 1e-5 * Σ_k |w_k| * |a_k| + 1e-30
// where w_k, a_k are the dequantized weight and activation elements (Σ|w_k a_k| bounds the
// magnitude of every partial sum either side computes, up to the non-cancelling min terms of
// Q4_1/Q5_1/Q*_K, which are of the same size for these random rows).
#include "backends/cpu/kernels/vec_dot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/kernel_test_flags.h"
#include "backends/cpu/kernels/vec_dot_internal.h"
#include "core/dtype.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::cpu {
namespace {

using quant::testing::gaussian;
using quant::testing::random_blocks;
using quant::testing::row_bytes;

constexpr GgmlType kAllTypes[] = {
    GgmlType::kF32,    GgmlType::kF16,    GgmlType::kBF16,  GgmlType::kQ4_0, GgmlType::kQ4_1,
    GgmlType::kQ5_0,   GgmlType::kQ5_1,   GgmlType::kQ8_0,  GgmlType::kQ8_1, GgmlType::kQ2_K,
    GgmlType::kQ3_K,   GgmlType::kQ4_K,   GgmlType::kQ5_K,  GgmlType::kQ6_K, GgmlType::kQ8_K,
    GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4, GgmlType::kI32,
};

bool same_family(Isa a, Isa b) {
  for (Isa i = a;; i = lower_isa(i)) {
    if (i == b) return true;
    if (i == Isa::kScalar) return false;
  }
}

std::string isa_str(Isa isa) { return std::string(isa_name(isa)); }

TEST(Isa, NamesRoundTrip) {
  for (Isa i : {Isa::kScalar, Isa::kSse4, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kNeon,
                Isa::kNeonDotprod, Isa::kNeonI8mm}) {
    EXPECT_EQ(parse_isa(isa_name(i)), i);
  }
  EXPECT_FALSE(parse_isa("sse9").has_value());
}

TEST(Isa, AvailableStartsWithScalarAndContainsBest) {
  const auto isas = available_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kScalar);
  bool has_best = false;
  for (Isa i : isas) {
    EXPECT_TRUE(isa_available(i));
    has_best |= i == cpu_isa();
  }
  EXPECT_TRUE(has_best);
  std::printf("cpu isa: %s; available:", isa_str(cpu_isa()).c_str());
  for (Isa i : isas) std::printf(" %s", isa_str(i).c_str());
  std::printf("\n");
#if defined(__x86_64__) || defined(__aarch64__)
  EXPECT_GE(isas.size(), 2u) << "no SIMD level detected";
#endif
}

TEST(Isa, CapIsa) {
  const Isa best = cpu_isa();
  EXPECT_EQ(cap_isa(best, std::nullopt), best);
  EXPECT_EQ(cap_isa(best, Isa::kScalar), Isa::kScalar);
  EXPECT_FALSE(parse_isa("bogus").has_value());
  for (Isa i : available_isas()) EXPECT_EQ(cap_isa(best, parse_isa(isa_name(i))), i);
    // A level of the other family (never available here) falls back to the best.
#if defined(__x86_64__)
  EXPECT_EQ(cap_isa(best, Isa::kNeon), best);
#elif defined(__aarch64__)
  EXPECT_EQ(cap_isa(best, Isa::kAvx2), best);
#endif
}

// set_isa_cap moves every later dispatch and can be undone: scalar, then back to the best (or
// to --isa's level, which this binary may run under).
TEST(Isa, SetIsaCapMovesDispatch) {
  const Isa before = detect_isa();
  set_isa_cap(Isa::kScalar);
  EXPECT_EQ(detect_isa(), Isa::kScalar);
  const auto k = dot_kernels(GgmlType::kQ8_0);
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->isa, Isa::kScalar);
  set_isa_cap(std::nullopt);
  EXPECT_EQ(detect_isa(), cpu_isa());
  set_isa_cap(before);
  EXPECT_EQ(detect_isa(), before);
}

// Registered a second time by CMake with --isa=scalar, where it checks the process-wide
// dispatch; without the flag it checks the same capping rule directly.
// --expect-isa=<name>: the test run that gives it (ctest's cpu_kernels_test_sse4_cpu, which
// runs this binary on an emulated CPU without AVX) fails unless dispatch picked that level for the
// CPU and the kernels of the SIMD weight types come from it: the SSE4 kernels are then what the
// other tests of that run exercised. Without it: those kernels come from the level dispatch picked.
TEST(IsaFlags, ExpectedIsa) {
  Isa isa = detect_isa();
  if (const auto want = ::geniex::cpu::testing::expected_isa()) {
    isa = *want;
    EXPECT_EQ(detect_isa(), isa);
    EXPECT_EQ(cpu_isa(), isa);
  }
  if (isa == Isa::kScalar) return;
  for (GgmlType t :
       {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kF16}) {
    const auto k = dot_kernels(t);
    ASSERT_TRUE(k.has_value()) << ggml_type_name(t);
    // AVX-512 without VNNI has no kernels of its own: AVX2's serve it.
    const Isa got = isa == Isa::kAvx512 ? Isa::kAvx2 : isa;
    EXPECT_EQ(k->isa, got) << ggml_type_name(t);
  }
}

// gemv_lockstep hands every unit over exactly once, the i-th unit of each contiguous part
// together (what makes the parts concurrent memory streams).
TEST(GemvLockstep, EveryUnitOnceAndPartsInLockstep) {
  for (int64_t count = 0; count <= 23; ++count) {
    for (int streams = 1; streams <= 6; ++streams) {
      std::vector<int> seen(static_cast<size_t>(count), 0);
      int64_t calls = 0;
      detail::gemv_lockstep(count, streams, [&](int n, const int64_t* units) {
        ASSERT_GE(n, 1);
        ASSERT_LE(n, std::min(streams, detail::kMaxGemvStreams));
        for (int i = 0; i < n; ++i) {
          ASSERT_GE(units[i], 0);
          ASSERT_LT(units[i], count);
          ++seen[static_cast<size_t>(units[i])];
          if (i > 0) {
            EXPECT_EQ(units[i] - units[i - 1], units[1] - units[0]) << "equal parts";
          }
        }
        EXPECT_EQ(units[0], calls) << "the first part is walked in order";
        ++calls;
      });
      for (int64_t u = 0; u < count; ++u) {
        EXPECT_EQ(seen[static_cast<size_t>(u)], 1) << "count " << count << " streams " << streams;
      }
      const int64_t parts = std::min<int64_t>({streams, detail::kMaxGemvStreams, count});
      if (count > 0) {
        EXPECT_EQ(calls, (count + parts - 1) / parts);
      }
    }
  }
}

TEST(IsaFlags, IsaFlagCapsDispatch) {
  if (::geniex::cpu::testing::requested_isa() != Isa::kScalar) {
    EXPECT_EQ(cap_isa(cpu_isa(), Isa::kScalar), Isa::kScalar);
    for (GgmlType t : kAllTypes) {
      const auto k = dot_kernels(t, Isa::kScalar);
      if (k) {
        EXPECT_EQ(k->isa, Isa::kScalar) << ggml_type_name(t);
      }
    }
    return;
  }
  EXPECT_EQ(detect_isa(), Isa::kScalar);
  for (GgmlType t : kAllTypes) {
    const auto k = dot_kernels(t);
    if (k) {
      EXPECT_EQ(k->isa, Isa::kScalar) << ggml_type_name(t);
    }
  }
}

TEST(DotKernels, CoversExactlyTheReferenceTypes) {
  for (Isa isa : available_isas()) {
    for (GgmlType t : kAllTypes) {
      const auto k = dot_kernels(t, isa);
      ASSERT_EQ(k.has_value(), quant::can_vec_dot(t)) << ggml_type_name(t) << " " << isa_str(isa);
      if (!k) continue;
      EXPECT_EQ(k->act_type, quant::vec_dot_type(t));
      EXPECT_NE(k->gemm, nullptr);
      EXPECT_NE(k->quantize_act, nullptr);
      EXPECT_TRUE(same_family(isa, k->isa)) << isa_str(isa) << " -> " << isa_str(k->isa);
      EXPECT_TRUE(isa_available(k->isa));
    }
    EXPECT_EQ(dot_kernels(GgmlType::kQ4_K, Isa::kScalar)->isa, Isa::kScalar);
  }
}

TEST(DotKernels, PriorityTypesHaveSimdKernels) {
  for (Isa isa : available_isas()) {
    if (isa == Isa::kScalar) continue;
    for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ4_K,
                       GgmlType::kQ6_K, GgmlType::kF32, GgmlType::kF16}) {
      EXPECT_NE(dot_kernels(t, isa)->isa, Isa::kScalar) << ggml_type_name(t) << " " << isa_str(isa);
    }
  }
}

// The SIMD activation quantizers on awkward inputs: exact .5 ties (round-half-away for Q8_0,
// half-even for Q8_K), zero / NaN / Inf blocks, equal |max| of both signs (the first wins),
// subnormal and tiny scales whose reciprocal overflows, huge values. Bytes must equal
// quant::quantize_row's.
TEST(DotKernels, ActivationQuantizationEdgeCasesMatchReference) {
  constexpr size_t kB = 256;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<float>> cases;
  auto pattern = [](float scale, uint32_t seed) {
    auto g = gaussian(kB, 1.0f, seed);
    for (auto& v : g) v *= scale;
    return g;
  };
  {  // ties: |max| = 127 gives d = 1 (Q8_0, per 32) and iscale = +-1 (Q8_K)
    std::vector<float> t(kB);
    for (size_t i = 0; i < kB; ++i) {
      t[i] = (i % 32 == 0) ? 127.0f : static_cast<float>(static_cast<int>(i % 61) - 30) + 0.5f;
    }
    cases.push_back(t);
    for (auto& v : t) v = -v;
    cases.push_back(t);
  }
  cases.push_back(std::vector<float>(kB, 0.0f));
  cases.push_back(std::vector<float>(kB, -0.0f));
  for (float special : {nan, inf, -inf}) {
    auto t = pattern(1.0f, 7);
    t[5] = special;
    t[200] = special;
    cases.push_back(t);
  }
  {  // equal |max| with both signs, in both orders
    auto t = pattern(0.1f, 8);
    t[3] = 3.0f;
    t[40] = -3.0f;
    t[100] = -3.0f;
    t[101] = 3.0f;
    cases.push_back(t);
  }
  for (float scale : {1e-39f, 1e-44f, 3e-38f, 1e-37f, 3e-37f, 1e-30f, 1e30f, 3e38f, 1.0f, 1e-5f,
                      3e-7f, 6e4f}) {  // the last three: f16 subnormals and overflow
    cases.push_back(pattern(scale, 9));
  }
  std::vector<float> x;
  for (const auto& c : cases) x.insert(x.end(), c.begin(), c.end());
  const size_t n = x.size();
  for (GgmlType wt : {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kF16}) {
    const GgmlType at = quant::vec_dot_type(wt);
    std::vector<uint8_t> want(row_bytes(at, n), 0);
    ASSERT_TRUE(quant::quantize_row(at, x, want).ok());
    for (Isa isa : available_isas()) {
      const auto k = dot_kernels(wt, isa);
      ASSERT_TRUE(k.has_value());
      std::vector<uint8_t> got(want.size(), 0x5A);
      k->quantize_act(x.data(), got.data(), static_cast<int64_t>(n));
      for (size_t c = 0; c < cases.size(); ++c) {
        const size_t rb = row_bytes(at, kB);
        EXPECT_TRUE(
            std::equal(got.begin() + c * rb, got.begin() + (c + 1) * rb, want.begin() + c * rb))
            << ggml_type_name(at) << " " << isa_str(isa) << " case " << c;
      }
    }
  }
}

// Weight rows of type t: quantized Gaussians where a reference quantizer exists, else random
// blocks with sane f16 scales.
std::vector<uint8_t> make_weights(GgmlType t, size_t rows, size_t n, size_t stride, uint32_t seed) {
  std::vector<uint8_t> w(rows * stride, 0xA5);
  const size_t rb = row_bytes(t, n);
  const size_t nblocks = n / traits(t).block_size;
  for (size_t i = 0; i < rows; ++i) {
    std::span<uint8_t> dst(w.data() + i * stride, rb);
    if (quant::can_quantize(t)) {
      const auto x = gaussian(n, 1.0f, seed + static_cast<uint32_t>(i));
      EXPECT_TRUE(quant::quantize_row(t, x, dst).ok());
    } else {
      const auto b = random_blocks(t, nblocks, 0.05f, seed + static_cast<uint32_t>(i));
      if (rb != 0) std::memcpy(dst.data(), b.data(), rb);
    }
  }
  return w;
}

std::vector<float> dequant(GgmlType t, const uint8_t* p, size_t n) {
  std::vector<float> out(n);
  EXPECT_TRUE(quant::dequantize_row(t, std::span<const uint8_t>(p, row_bytes(t, n)), out).ok());
  return out;
}

void check_type(GgmlType t,
                const std::vector<size_t>& ns_all = {32, 256, 512, 2048, 32 * 7, 256 * 3, 37, 2053,
                                                     8, 0},
                const std::vector<int64_t>& nrs = {1, 3, 8, 17},
                const std::vector<int64_t>& ncs = {1, 2, 5, 16}) {
  const GgmlType at = quant::vec_dot_type(t);
  const size_t bs = traits(t).block_size;
  const std::vector<Isa> isas = available_isas();
  uint32_t seed = 1000 + static_cast<uint32_t>(t);
  for (size_t n : ns_all) {
    if (n % bs != 0 || (bs == 1 && n == 0)) continue;
    for (int64_t nr : nrs) {
      for (int64_t nc : ncs) {
        SCOPED_TRACE(std::string(ggml_type_name(t)) + " n=" + std::to_string(n) +
                     " nr=" + std::to_string(nr) + " nc=" + std::to_string(nc));
        const size_t wrb = row_bytes(t, n), arb = row_bytes(at, n);
        const size_t ws = wrb + 5, as = arb + 7, os = static_cast<size_t>(nr) + 3;
        const auto w = make_weights(t, static_cast<size_t>(nr), n, ws, 100 * seed);
        // Reference activations, quantized by quant::quantize_row.
        std::vector<std::vector<float>> x(static_cast<size_t>(nc));
        std::vector<uint8_t> a_ref(static_cast<size_t>(nc) * as, 0);
        for (int64_t j = 0; j < nc; ++j) {
          x[j] = gaussian(n, 2.0f, 100 * seed + 50 + static_cast<uint32_t>(j));
          ASSERT_TRUE(quant::quantize_row(at, x[j], {a_ref.data() + j * as, arb}).ok());
        }
        ++seed;  // weights use seeds 100*seed + i (i < 17), activations 100*seed + 50 + j
        std::vector<float> ref(static_cast<size_t>(nc * nr)), tol(ref.size());
        for (int64_t j = 0; j < nc; ++j) {
          const auto ad = dequant(at, a_ref.data() + j * as, n);
          for (int64_t i = 0; i < nr; ++i) {
            const auto r =
                quant::vec_dot_ref(t, {w.data() + i * ws, wrb}, {a_ref.data() + j * as, arb}, n);
            ASSERT_TRUE(r.ok());
            ref[j * nr + i] = *r;
            const auto wd = dequant(t, w.data() + i * ws, n);
            double mag = 0.0;
            for (size_t k = 0; k < n; ++k) mag += std::fabs(double(wd[k]) * double(ad[k]));
            tol[j * nr + i] = static_cast<float>(1e-5 * mag + 1e-30);
          }
        }
        for (Isa isa : isas) {
          SCOPED_TRACE(isa_str(isa));
          const auto k = dot_kernels(t, isa);
          ASSERT_TRUE(k.has_value());
          // Activation quantization: byte-identical to the reference.
          std::vector<uint8_t> a(a_ref.size(), 0);
          for (int64_t j = 0; j < nc; ++j) {
            k->quantize_act(x[j].data(), a.data() + j * as, static_cast<int64_t>(n));
          }
          ASSERT_EQ(a, a_ref);
          std::vector<float> out(static_cast<size_t>(nc) * os,
                                 std::numeric_limits<float>::quiet_NaN());
          k->gemm(static_cast<int64_t>(n), w.data(), ws, nr, a.data(), as, nc, out.data(), os);
          for (int64_t j = 0; j < nc; ++j) {
            for (int64_t i = 0; i < nr; ++i) {
              const float got = out[j * os + i], want = ref[j * nr + i];
              ASSERT_NEAR(got, want, tol[j * nr + i])
                  << "i=" << i << " j=" << j << " kernel isa " << isa_str(k->isa);
            }
            for (size_t i = static_cast<size_t>(nr); i < os; ++i) {
              ASSERT_TRUE(std::isnan(out[j * os + i])) << "wrote past nr";
            }
          }
        }
      }
    }
  }
}

// Rows longer than the kernels' internal K chunks (e.g. the 512-block activation-sum chunks of
// the 32-element GEMV paths): chunk results must add up.
TEST(DotKernels, LongRowsMatchVecDotRef) {
  for (GgmlType t :
       {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_1, GgmlType::kQ4_K}) {
    check_type(t, {32 * 1100, 256 * 130}, {1, 5}, {1, 3});
  }
}

// A GEMV gives the same bits whatever the number of lockstep weight streams: 1 takes each row
// alone, 2 and 4 (an odd row count leaves short parts) may run the rows of all streams together
// (Q6_K's run_gemv_rows), which must repeat the one-row arithmetic exactly.
TEST(DotKernels, GemvSameBitsForEveryStreamCount) {
  const int saved = gemv_streams();
  const size_t n = 1024;
  const int64_t nr = 37;
  for (GgmlType t : {GgmlType::kQ6_K, GgmlType::kQ4_K, GgmlType::kQ8_0, GgmlType::kF16}) {
    const GgmlType at = quant::vec_dot_type(t);
    const size_t wrb = row_bytes(t, n), arb = row_bytes(at, n);
    const auto w = make_weights(t, static_cast<size_t>(nr), n, wrb, 77);
    const auto x = gaussian(n, 2.0f, 78);
    for (Isa isa : available_isas()) {
      SCOPED_TRACE(std::string(ggml_type_name(t)) + " " + isa_str(isa));
      const auto k = dot_kernels(t, isa);
      ASSERT_TRUE(k.has_value());
      std::vector<uint8_t> a(arb);
      k->quantize_act(x.data(), a.data(), static_cast<int64_t>(n));
      std::vector<std::vector<float>> outs;
      for (int streams : {1, 2, 4}) {
        set_gemv_streams(streams);
        std::vector<float> out(static_cast<size_t>(nr));
        k->gemm(static_cast<int64_t>(n), w.data(), wrb, nr, a.data(), arb, 1, out.data(),
                static_cast<size_t>(nr));
        outs.push_back(out);
      }
      for (size_t i = 1; i < outs.size(); ++i) {
        EXPECT_EQ(0, std::memcmp(outs[0].data(), outs[i].data(), outs[0].size() * sizeof(float)))
            << "streams variant " << i;
      }
    }
  }
  set_gemv_streams(saved);
}

class GemmVsRef : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GemmVsRef, MatchesVecDotRef) { check_type(GetParam()); }

INSTANTIATE_TEST_SUITE_P(AllDotTypes, GemmVsRef,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16,
                                           GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                           GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K,
                                           GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                                           GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS,
                                           GgmlType::kMXFP4),
                         [](const ::testing::TestParamInfo<GgmlType>& p) {
                           return std::string(ggml_type_name(p.param));
                         });

}  // namespace
}  // namespace geniex::cpu
