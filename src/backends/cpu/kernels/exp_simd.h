// Float e^x for SIMD kernels (SiLU, softmax): one algorithm, written for AVX2+FMA (__m256),
// AVX-512F (__m512), NEON (float32x4_t) and scalar code.
//
// Algorithm (Cody-Waite): n = round(x * log2(e)), r = x - n * ln2 with ln2 split into a 9-bit
// hi part (n * hi is exact for |n| <= 128, and x - n * hi is exact) and a lo part; then
// e^r = Taylor series of degree 7 on |r| <= ln2/2 (+ rounding slack), truncation < 6e-9
// relative; finally 2^n is applied by adding n to the exponent bits of e^r.
//
// Accuracy: <= 2 ULP against a double-precision exp for every float x in [kExpMinX, kExpMaxX];
// measured over every such float: max 0.94 ULP (FMA paths), 1.22 ULP (exp_poly). Tested by
// backends/cpu/silu_test.cpp (dense sweep, range ends, random bit patterns).
// Special values: x > kExpMaxX (incl. +inf) -> +inf; NaN -> NaN (the input). Results below
// FLT_MIN are flushed: x < kExpMinX (incl. -inf) -> +0, never a denormal, so the exponent-bit
// scaling never needs a second step (e^x < FLT_MIN is dropped where it would be a denormal).
//
// x86 functions carry per-function target attributes, so including this header emits nothing
// wider than the baseline outside code that was dispatched to (cpu::detect_isa()). The SIMD
// versions use FMA and give bit-identical results to each other; exp_poly uses separate multiply
// and add (the build has -ffp-contract=off) and may differ from them by an ULP.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace geniex::cpu {

/// The largest float whose e^x is finite (0x42B17217, just below ln(FLT_MAX)).
inline constexpr float kExpMaxX = 88.72283172607421875f;
/// The smallest float whose e^x is >= FLT_MIN (0x42AEAC4F negated, just above ln(FLT_MIN)).
inline constexpr float kExpMinX = -87.33654022216796875f;

namespace exp_detail {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;           // 0x3F318000: 9 significant bits
inline constexpr float kLn2Lo = -2.12194440054691e-4f;  // ln2 - kLn2Hi
// 1/k! for k = 7 .. 2.
inline constexpr float kC7 = 1.0f / 5040.0f;
inline constexpr float kC6 = 1.0f / 720.0f;
inline constexpr float kC5 = 1.0f / 120.0f;
inline constexpr float kC4 = 1.0f / 24.0f;
inline constexpr float kC3 = 1.0f / 6.0f;
inline constexpr float kC2 = 0.5f;
}  // namespace exp_detail

/// e^x in scalar code, the same algorithm as the SIMD versions (no FMA).
inline float exp_poly(float x) {
  using namespace exp_detail;
  if (x != x) return x;
  if (x > kExpMaxX) return std::numeric_limits<float>::infinity();
  if (x < kExpMinX) return 0.0f;
  // Round to nearest even with the 1.5 * 2^23 shifter (|x * log2e| < 2^22 here).
  constexpr float kShift = 12582912.0f;
  const float n = (x * kLog2e + kShift) - kShift;
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kC7;
  p = p * r + kC6;
  p = p * r + kC5;
  p = p * r + kC4;
  p = p * r + kC3;
  p = p * r + kC2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t e = static_cast<uint32_t>(static_cast<int32_t>(n)) << 23;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(p) + e);
}

#if defined(__x86_64__)
/// e^x for 8 floats (AVX2 + FMA).
__attribute__((target("avx2,fma"))) inline __m256 exp_avx2(__m256 x) {
  using namespace exp_detail;
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kC7);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  __m256 y = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
  // Out-of-range and NaN lanes hold garbage so far; fix them last.
  y = _mm256_blendv_ps(y, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                       _mm256_cmp_ps(x, _mm256_set1_ps(kExpMaxX), _CMP_GT_OQ));
  y = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(kExpMinX), _CMP_LT_OQ), y);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// e^x for 16 floats (AVX-512F).
__attribute__((target("avx512f"))) inline __m512 exp_avx512(__m512 x) {
  using namespace exp_detail;
  // The all-lanes mask forms: GCC 12's unmasked ones start from _mm512_undefined_*, which
  // -Wmaybe-uninitialized reports in every caller.
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kC7);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtps_epi32(kAll, n), 23);
  __m512 y = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMaxX), _CMP_GT_OQ),
                         _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMinX), _CMP_LT_OQ),
                         _mm512_setzero_ps());
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}
#endif

#if defined(__aarch64__)
/// e^x for 4 floats (NEON, baseline on aarch64).
inline float32x4_t exp_neon(float32x4_t x) {
  using namespace exp_detail;
  const int32x4_t ni = vcvtnq_s32_f32(vmulq_n_f32(x, kLog2e));
  const float32x4_t n = vcvtq_f32_s32(ni);
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(kLn2Hi));
  r = vfmsq_f32(r, n, vdupq_n_f32(kLn2Lo));
  float32x4_t p = vdupq_n_f32(kC7);
  p = vfmaq_f32(vdupq_n_f32(kC6), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC5), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC4), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC3), p, r);
  p = vfmaq_f32(vdupq_n_f32(kC2), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t e = vshlq_n_s32(ni, 23);
  float32x4_t y = vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(p), e));
  y = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(kExpMaxX)),
                vdupq_n_f32(std::numeric_limits<float>::infinity()), y);
  y = vbslq_f32(vcltq_f32(x, vdupq_n_f32(kExpMinX)), vdupq_n_f32(0.0f), y);
  return vbslq_f32(vceqq_f32(x, x), y, x);
}
#endif

}  // namespace geniex::cpu
