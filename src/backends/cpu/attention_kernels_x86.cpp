// x86 attention kernels: AVX2 (+FMA, F16C) and AVX-512 (F, BW, VL). Every function carries a
// per-function target attribute and lives in an anonymous namespace, so nothing compiled for a
// wider ISA can be picked by the linker for code that runs before dispatch (kernels_for()).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/kernels/exp_simd.h"
#include "core/fp16.h"

// GCC 12 warns about the deliberately uninitialized _mm*_undefined_* values inside the AVX-512
// intrinsics (cvtph_ps, reduce_add_ps) once they are inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace geniex::backends::cpu::attn {
namespace {

// Q4_0 nibbles to int8 with SSE2 (baseline x86-64): low nibbles - 8, then high nibbles - 8.
inline void unpack_q4_sse2(const uint8_t* qs, int8_t* out) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  const __m128i lo = _mm_sub_epi8(_mm_and_si128(x, m), eight);
  const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m), eight);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), lo);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), hi);
}

}  // namespace

namespace avx2 {
namespace {

#define ATTN_TARGET __attribute__((target("avx2,fma,f16c")))
struct V {
  static constexpr int W = 8;
  static constexpr int CV = 2;
  using R = __m256;
  ATTN_TARGET static R zero() { return _mm256_setzero_ps(); }
  ATTN_TARGET static R set1(float x) { return _mm256_set1_ps(x); }
  ATTN_TARGET static R load(const float* p) { return _mm256_loadu_ps(p); }
  ATTN_TARGET static R load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  ATTN_TARGET static void store(float* p, R x) { _mm256_storeu_ps(p, x); }
  ATTN_TARGET static R add(R a, R b) { return _mm256_add_ps(a, b); }
  ATTN_TARGET static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  ATTN_TARGET static R exp(R a) { return ::geniex::cpu::exp_avx2(a); }
  using D = __m256d;
  ATTN_TARGET static D dzero() { return _mm256_setzero_pd(); }
  ATTN_TARGET static void dacc(D* acc, R e) {
    acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  ATTN_TARGET static double dsum(const D* acc) {
    const __m256d s = _mm256_add_pd(acc[0], acc[1]);
    const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
  }
  ATTN_TARGET static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  ATTN_TARGET static R max(R a, R b) { return _mm256_max_ps(a, b); }
  ATTN_TARGET static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  ATTN_TARGET static float hsum(R a) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
  }
  // Four 8-lane sums at once: [a0, a1, a2, a3] -> out[0..3].
  ATTN_TARGET static void hsum4_256(__m256 a0, __m256 a1, __m256 a2, __m256 a3, float* out) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
  ATTN_TARGET static void hsum4(const R* a, float* out) { hsum4_256(a[0], a[1], a[2], a[3], out); }
  ATTN_TARGET static R round_f16(R a) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  ATTN_TARGET static R load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  ATTN_TARGET static void unpack_q4(const uint8_t* qs, int8_t* out) { unpack_q4_sse2(qs, out); }
};
#include "backends/cpu/attention_kernels_impl.h"  // NOLINT(build/include)
#undef ATTN_TARGET

}  // namespace
}  // namespace avx2

namespace avx512 {
namespace {

#define ATTN_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
struct V {
  static constexpr int W = 16;
  static constexpr int CV = 4;
  using R = __m512;
  ATTN_TARGET static R zero() { return _mm512_setzero_ps(); }
  ATTN_TARGET static R set1(float x) { return _mm512_set1_ps(x); }
  ATTN_TARGET static R load(const float* p) { return _mm512_loadu_ps(p); }
  ATTN_TARGET static R load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  ATTN_TARGET static void store(float* p, R x) { _mm512_storeu_ps(p, x); }
  ATTN_TARGET static R add(R a, R b) { return _mm512_add_ps(a, b); }
  ATTN_TARGET static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  ATTN_TARGET static R exp(R a) { return ::geniex::cpu::exp_avx512(a); }
  using D = __m512d;
  ATTN_TARGET static D dzero() { return _mm512_setzero_pd(); }
  ATTN_TARGET static void dacc(D* acc, R e) {
    acc[0] = _mm512_add_pd(acc[0], _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    acc[1] = _mm512_add_pd(
        acc[1], _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  ATTN_TARGET static double dsum(const D* acc) {
    const __m512d s = _mm512_add_pd(acc[0], acc[1]);
    const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
    const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
  }
  ATTN_TARGET static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  ATTN_TARGET static R max(R a, R b) { return _mm512_max_ps(a, b); }
  ATTN_TARGET static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  ATTN_TARGET static float hsum(R a) { return _mm512_reduce_add_ps(a); }
  ATTN_TARGET static __m256 fold(R a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  }
  ATTN_TARGET static void hsum4(const R* a, float* out) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(fold(a[0]), fold(a[1])),
                                    _mm256_hadd_ps(fold(a[2]), fold(a[3])));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
  // Sixteen hsum4 sums at once, each with hsum4's tree: ((f0 + f1) + (f2 + f3)) + ((f4 + f5) +
  // (f6 + f7)) over f_j = a_j + a_(j+8). Two dots per register from the fold on, then four,
  // like hadd within each 128 bits.
  ATTN_TARGET static __m512 pair_fold(R x, R y) {  // [fold(x), fold(y)]
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44), _mm512_shuffle_f32x4(x, y, 0xEE));
  }
  ATTN_TARGET static __m512 pair_add(__m512 x, __m512 y) {  // per 128 bits: hadd(x, y)
    return _mm512_add_ps(_mm512_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  ATTN_TARGET static void hsum16(const R* a, float* out) {
    __m512 f[8], g[4];
    for (int x = 0; x < 8; ++x) f[x] = pair_fold(a[2 * x], a[2 * x + 1]);
    for (int x = 0; x < 4; ++x) g[x] = pair_add(f[2 * x], f[2 * x + 1]);
    const __m512 h0 = pair_add(g[0], g[1]), h1 = pair_add(g[2], g[3]);
    const __m512 r =
        _mm512_add_ps(_mm512_shuffle_f32x4(h0, h1, 0x88), _mm512_shuffle_f32x4(h0, h1, 0xDD));
    // r holds dots 0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15: back in order.
    const __m512i order = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    _mm512_storeu_ps(out, _mm512_permutexvar_ps(order, r));
  }
  ATTN_TARGET static R round_f16(R a) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  ATTN_TARGET static R load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  ATTN_TARGET static void unpack_q4(const uint8_t* qs, int8_t* out) { unpack_q4_sse2(qs, out); }
};
#include "backends/cpu/attention_kernels_impl.h"  // NOLINT(build/include)
#undef ATTN_TARGET

}  // namespace
}  // namespace avx512

const Kernels& avx2_kernels() {
  static const Kernels k{
      avx2::attn_dots_f32,     avx2::attn_dots_f16,      avx2::attn_pv_f32,
      avx2::attn_pv_f16,       avx2::attn_softmax_exp,   avx2::attn_scale,
      avx2::attn_dense_scores, avx2::attn_row_max,       avx2::attn_dequant_q8_0,
      avx2::attn_dequant_q4_0, avx2::attn_head_dots_f32, avx2::attn_head_dots_f16,
      avx2::attn_pv_heads_f32, avx2::attn_pv_heads_f16};
  return k;
}

const Kernels& avx512_kernels() {
  static const Kernels k{
      avx512::attn_dots_f32,     avx512::attn_dots_f16,      avx512::attn_pv_f32,
      avx512::attn_pv_f16,       avx512::attn_softmax_exp,   avx512::attn_scale,
      avx512::attn_dense_scores, avx512::attn_row_max,       avx512::attn_dequant_q8_0,
      avx512::attn_dequant_q4_0, avx512::attn_head_dots_f32, avx512::attn_head_dots_f16,
      avx512::attn_pv_heads_f32, avx512::attn_pv_heads_f16};
  return k;
}

}  // namespace geniex::backends::cpu::attn
#endif  // __x86_64__
