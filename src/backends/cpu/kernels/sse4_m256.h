// The AVX2 / FMA / F16C intrinsics that vec_dot_x86-inl.h uses, emulated on SSE4.1 (+ SSSE3)
// with two 128-bit halves, so that the one x86 kernel source also serves x86-64 CPUs without AVX
// (Atom-class edge boxes, older Celerons and Pentiums): vec_dot_sse4.cpp includes this header,
// then the kernels, inside its own namespace.
//
// Only that translation unit may include it. It must not see <immintrin.h> (only <smmintrin.h>):
// the 256-bit names below are declared here, in the including namespace, and nowhere else, so
// they hide nothing and nothing hides them. Integer results are the AVX2 instructions' exactly
// (every 256-bit operation the kernels use works within 128-bit lanes, or is spelled out below).
// Float differences from the AVX2 build: fmadd is a multiply then an add (two roundings; the
// kernels are checked against the scalar reference within tolerance, and the packed kernels
// against the row kernels, which round the same way here); F16 -> F32 is exact, as F16C.
// NOLINTBEGIN(bugprone-reserved-identifier, cert-dcl37-c, cert-dcl51-cpp)
// NOLINT(build/header_guard): included once, by vec_dot_sse4.cpp, inside a namespace.

#define GENIEX_SSE4_FN __attribute__((target("sse4.1,ssse3"), always_inline)) inline

struct __m256i {
  __m128i lo, hi;
};
struct __m256 {
  __m128 lo, hi;
};

// ---- integer ------------------------------------------------------------------------------

GENIEX_SSE4_FN __m256i _mm256_setzero_si256() { return {_mm_setzero_si128(), _mm_setzero_si128()}; }
GENIEX_SSE4_FN __m256i _mm256_set1_epi8(char v) { return {_mm_set1_epi8(v), _mm_set1_epi8(v)}; }
GENIEX_SSE4_FN __m256i _mm256_set1_epi16(short v) { return {_mm_set1_epi16(v), _mm_set1_epi16(v)}; }
GENIEX_SSE4_FN __m256i _mm256_set1_epi32(int v) { return {_mm_set1_epi32(v), _mm_set1_epi32(v)}; }
GENIEX_SSE4_FN __m256i _mm256_set1_epi64x(long long v) {
  return {_mm_set1_epi64x(v), _mm_set1_epi64x(v)};
}
GENIEX_SSE4_FN __m256i _mm256_set_epi64x(long long e3, long long e2, long long e1, long long e0) {
  return {_mm_set_epi64x(e1, e0), _mm_set_epi64x(e3, e2)};
}
GENIEX_SSE4_FN __m256i _mm256_setr_epi32(int e0, int e1, int e2, int e3, int e4, int e5, int e6,
                                         int e7) {
  return {_mm_setr_epi32(e0, e1, e2, e3), _mm_setr_epi32(e4, e5, e6, e7)};
}
GENIEX_SSE4_FN __m256i _mm256_set_m128i(__m128i hi, __m128i lo) { return {lo, hi}; }
GENIEX_SSE4_FN __m256i _mm256_zextsi128_si256(__m128i lo) { return {lo, _mm_setzero_si128()}; }
GENIEX_SSE4_FN __m128i _mm256_castsi256_si128(__m256i a) { return a.lo; }
GENIEX_SSE4_FN __m128i _mm256_extracti128_si256(__m256i a, int i) { return i != 0 ? a.hi : a.lo; }
GENIEX_SSE4_FN int _mm256_extract_epi32(__m256i a, int i) {
  alignas(16) int t[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(t), a.lo);
  _mm_store_si128(reinterpret_cast<__m128i*>(t + 4), a.hi);
  return t[i & 7];
}

GENIEX_SSE4_FN __m256i _mm256_loadu_si256(const __m256i* p) {
  const auto* q = reinterpret_cast<const __m128i*>(p);
  return {_mm_loadu_si128(q), _mm_loadu_si128(q + 1)};
}
GENIEX_SSE4_FN void _mm256_storeu_si256(__m256i* p, __m256i a) {
  auto* q = reinterpret_cast<__m128i*>(p);
  _mm_storeu_si128(q, a.lo);
  _mm_storeu_si128(q + 1, a.hi);
}

#define GENIEX_SSE4_BINARY_I(name, op) \
  GENIEX_SSE4_FN __m256i name(__m256i a, __m256i b) { return {op(a.lo, b.lo), op(a.hi, b.hi)}; }
GENIEX_SSE4_BINARY_I(_mm256_and_si256, _mm_and_si128)
GENIEX_SSE4_BINARY_I(_mm256_or_si256, _mm_or_si128)
GENIEX_SSE4_BINARY_I(_mm256_xor_si256, _mm_xor_si128)
GENIEX_SSE4_BINARY_I(_mm256_add_epi16, _mm_add_epi16)
GENIEX_SSE4_BINARY_I(_mm256_add_epi32, _mm_add_epi32)
GENIEX_SSE4_BINARY_I(_mm256_add_epi64, _mm_add_epi64)
GENIEX_SSE4_BINARY_I(_mm256_sub_epi16, _mm_sub_epi16)
GENIEX_SSE4_BINARY_I(_mm256_sub_epi32, _mm_sub_epi32)
GENIEX_SSE4_BINARY_I(_mm256_mullo_epi32, _mm_mullo_epi32)
GENIEX_SSE4_BINARY_I(_mm256_maddubs_epi16, _mm_maddubs_epi16)
GENIEX_SSE4_BINARY_I(_mm256_madd_epi16, _mm_madd_epi16)
GENIEX_SSE4_BINARY_I(_mm256_sign_epi8, _mm_sign_epi8)
GENIEX_SSE4_BINARY_I(_mm256_shuffle_epi8, _mm_shuffle_epi8)  // within each 128-bit lane, as AVX2
GENIEX_SSE4_BINARY_I(_mm256_cmpeq_epi8, _mm_cmpeq_epi8)
GENIEX_SSE4_BINARY_I(_mm256_hadd_epi32, _mm_hadd_epi32)    // per lane, as AVX2
GENIEX_SSE4_BINARY_I(_mm256_packs_epi16, _mm_packs_epi16)  // per lane, as AVX2
GENIEX_SSE4_BINARY_I(_mm256_packs_epi32, _mm_packs_epi32)  // per lane, as AVX2
GENIEX_SSE4_BINARY_I(_mm256_sad_epu8, _mm_sad_epu8)
#undef GENIEX_SSE4_BINARY_I

GENIEX_SSE4_FN __m256i _mm256_slli_epi16(__m256i a, int n) {
  return {_mm_slli_epi16(a.lo, n), _mm_slli_epi16(a.hi, n)};
}
GENIEX_SSE4_FN __m256i _mm256_srli_epi16(__m256i a, int n) {
  return {_mm_srli_epi16(a.lo, n), _mm_srli_epi16(a.hi, n)};
}
GENIEX_SSE4_FN __m256i _mm256_slli_epi32(__m256i a, int n) {
  return {_mm_slli_epi32(a.lo, n), _mm_slli_epi32(a.hi, n)};
}
GENIEX_SSE4_FN __m256i _mm256_sll_epi16(__m256i a, __m128i n) {
  return {_mm_sll_epi16(a.lo, n), _mm_sll_epi16(a.hi, n)};
}
GENIEX_SSE4_FN __m256i _mm256_srl_epi16(__m256i a, __m128i n) {
  return {_mm_srl_epi16(a.lo, n), _mm_srl_epi16(a.hi, n)};
}
// Byte shift within each 128-bit lane (the kernels shift by 8 only).
GENIEX_SSE4_FN __m256i _mm256_srli_si256(__m256i a, int n) {
  if (n == 8) return {_mm_srli_si128(a.lo, 8), _mm_srli_si128(a.hi, 8)};
  alignas(16) uint8_t t[32] = {};
  alignas(16) uint8_t r[32] = {};
  _mm_store_si128(reinterpret_cast<__m128i*>(t), a.lo);
  _mm_store_si128(reinterpret_cast<__m128i*>(t + 16), a.hi);
  for (int lane = 0; lane < 2; ++lane) {
    for (int i = 0; i + n < 16; ++i) r[16 * lane + i] = t[16 * lane + i + n];
  }
  return {_mm_load_si128(reinterpret_cast<const __m128i*>(r)),
          _mm_load_si128(reinterpret_cast<const __m128i*>(r + 16))};
}
// The one cross-lane permute the kernels use.
GENIEX_SSE4_FN __m256i _mm256_permutevar8x32_epi32(__m256i a, __m256i idx) {
  alignas(16) int t[8];
  alignas(16) int k[8];
  alignas(16) int r[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(t), a.lo);
  _mm_store_si128(reinterpret_cast<__m128i*>(t + 4), a.hi);
  _mm_store_si128(reinterpret_cast<__m128i*>(k), idx.lo);
  _mm_store_si128(reinterpret_cast<__m128i*>(k + 4), idx.hi);
  for (int i = 0; i < 8; ++i) r[i] = t[k[i] & 7];
  return {_mm_load_si128(reinterpret_cast<const __m128i*>(r)),
          _mm_load_si128(reinterpret_cast<const __m128i*>(r + 4))};
}

// Widening conversions of a 128-bit source, as AVX2's (the low half takes the low elements).
GENIEX_SSE4_FN __m256i _mm256_cvtepu8_epi16(__m128i x) {
  return {_mm_cvtepu8_epi16(x), _mm_cvtepu8_epi16(_mm_srli_si128(x, 8))};
}
GENIEX_SSE4_FN __m256i _mm256_cvtepi8_epi16(__m128i x) {
  return {_mm_cvtepi8_epi16(x), _mm_cvtepi8_epi16(_mm_srli_si128(x, 8))};
}
GENIEX_SSE4_FN __m256i _mm256_cvtepu8_epi32(__m128i x) {
  return {_mm_cvtepu8_epi32(x), _mm_cvtepu8_epi32(_mm_srli_si128(x, 4))};
}
GENIEX_SSE4_FN __m256i _mm256_cvtepi8_epi32(__m128i x) {
  return {_mm_cvtepi8_epi32(x), _mm_cvtepi8_epi32(_mm_srli_si128(x, 4))};
}
GENIEX_SSE4_FN __m256i _mm256_cvtepu16_epi32(__m128i x) {
  return {_mm_cvtepu16_epi32(x), _mm_cvtepu16_epi32(_mm_srli_si128(x, 8))};
}

// ---- float --------------------------------------------------------------------------------

GENIEX_SSE4_FN __m256 _mm256_setzero_ps() { return {_mm_setzero_ps(), _mm_setzero_ps()}; }
GENIEX_SSE4_FN __m256 _mm256_set1_ps(float v) { return {_mm_set1_ps(v), _mm_set1_ps(v)}; }
GENIEX_SSE4_FN __m256 _mm256_set_m128(__m128 hi, __m128 lo) { return {lo, hi}; }
GENIEX_SSE4_FN __m128 _mm256_castps256_ps128(__m256 a) { return a.lo; }
GENIEX_SSE4_FN __m128 _mm256_extractf128_ps(__m256 a, int i) { return i != 0 ? a.hi : a.lo; }
GENIEX_SSE4_FN __m256 _mm256_loadu_ps(const float* p) {
  return {_mm_loadu_ps(p), _mm_loadu_ps(p + 4)};
}
GENIEX_SSE4_FN void _mm256_storeu_ps(float* p, __m256 a) {
  _mm_storeu_ps(p, a.lo);
  _mm_storeu_ps(p + 4, a.hi);
}

#define GENIEX_SSE4_BINARY_F(name, op) \
  GENIEX_SSE4_FN __m256 name(__m256 a, __m256 b) { return {op(a.lo, b.lo), op(a.hi, b.hi)}; }
GENIEX_SSE4_BINARY_F(_mm256_add_ps, _mm_add_ps)
GENIEX_SSE4_BINARY_F(_mm256_sub_ps, _mm_sub_ps)
GENIEX_SSE4_BINARY_F(_mm256_mul_ps, _mm_mul_ps)
GENIEX_SSE4_BINARY_F(_mm256_max_ps, _mm_max_ps)
GENIEX_SSE4_BINARY_F(_mm256_and_ps, _mm_and_ps)
GENIEX_SSE4_BINARY_F(_mm256_or_ps, _mm_or_ps)
GENIEX_SSE4_BINARY_F(_mm256_andnot_ps, _mm_andnot_ps)
#undef GENIEX_SSE4_BINARY_F

// No FMA before AVX2-class cores: a multiply, then an add.
GENIEX_SSE4_FN __m128 _mm_fmadd_ps(__m128 a, __m128 b, __m128 c) {
  return _mm_add_ps(_mm_mul_ps(a, b), c);
}
GENIEX_SSE4_FN __m256 _mm256_fmadd_ps(__m256 a, __m256 b, __m256 c) {
  return {_mm_fmadd_ps(a.lo, b.lo, c.lo), _mm_fmadd_ps(a.hi, b.hi, c.hi)};
}

GENIEX_SSE4_FN __m256 _mm256_cvtepi32_ps(__m256i a) {
  return {_mm_cvtepi32_ps(a.lo), _mm_cvtepi32_ps(a.hi)};
}
GENIEX_SSE4_FN __m256i _mm256_cvtps_epi32(__m256 a) {
  return {_mm_cvtps_epi32(a.lo), _mm_cvtps_epi32(a.hi)};
}
GENIEX_SSE4_FN __m256i _mm256_cvttps_epi32(__m256 a) {
  return {_mm_cvttps_epi32(a.lo), _mm_cvttps_epi32(a.hi)};
}
GENIEX_SSE4_FN __m256 _mm256_castsi256_ps(__m256i a) {
  return {_mm_castsi128_ps(a.lo), _mm_castsi128_ps(a.hi)};
}
GENIEX_SSE4_FN __m256i _mm256_castps_si256(__m256 a) {
  return {_mm_castps_si128(a.lo), _mm_castps_si128(a.hi)};
}
GENIEX_SSE4_FN __m256 _mm256_broadcast_ss(const float* p) {
  float f;
  std::memcpy(&f, p, sizeof f);  // p may point into bytes
  const __m128 v = _mm_set1_ps(f);
  return {v, v};
}
GENIEX_SSE4_FN int _mm256_movemask_ps(__m256 a) {
  return _mm_movemask_ps(a.lo) | (_mm_movemask_ps(a.hi) << 4);
}

// The two comparison predicates the kernels use (values as in AVX's <immintrin.h>).
#ifndef _CMP_EQ_OQ
#define _CMP_EQ_OQ 0x00
#endif
#ifndef _CMP_NLE_UQ
#define _CMP_NLE_UQ 0x16
#endif
GENIEX_SSE4_FN __m256 _mm256_cmp_ps(__m256 a, __m256 b, int pred) {
  if (pred == _CMP_NLE_UQ) return {_mm_cmpnle_ps(a.lo, b.lo), _mm_cmpnle_ps(a.hi, b.hi)};
  return {_mm_cmpeq_ps(a.lo, b.lo), _mm_cmpeq_ps(a.hi, b.hi)};  // _CMP_EQ_OQ
}

// binary16 -> binary32, exact (as F16C and geniex::fp16_to_fp32: subnormals scaled by 2^112 from
// the shifted bits, Inf and NaN keep their payload).
GENIEX_SSE4_FN __m128 geniex_sse4_half4(__m128i h16) {
  const __m128i h = _mm_cvtepu16_epi32(h16);
  const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
  const __m128i em = _mm_and_si128(h, _mm_set1_epi32(0x7FFF));
  const __m128i shifted = _mm_slli_epi32(em, 13);
  const __m128 finite = _mm_mul_ps(_mm_castsi128_ps(shifted), _mm_set1_ps(0x1p112f));
  const __m128i special = _mm_or_si128(shifted, _mm_set1_epi32(0x7F800000));
  const __m128i is_special = _mm_cmpgt_epi32(em, _mm_set1_epi32(0x7BFF));
  const __m128i bits = _mm_blendv_epi8(_mm_castps_si128(finite), special, is_special);
  return _mm_castsi128_ps(_mm_or_si128(bits, sign));
}
GENIEX_SSE4_FN __m128 _mm_cvtph_ps(__m128i x) { return geniex_sse4_half4(x); }
GENIEX_SSE4_FN __m256 _mm256_cvtph_ps(__m128i x) {
  return {geniex_sse4_half4(x), geniex_sse4_half4(_mm_srli_si128(x, 8))};
}
GENIEX_SSE4_FN float _cvtsh_ss(uint16_t h) {
  return _mm_cvtss_f32(geniex_sse4_half4(_mm_cvtsi32_si128(h)));
}

#undef GENIEX_SSE4_FN
// NOLINTEND(bugprone-reserved-identifier, cert-dcl37-c, cert-dcl51-cpp)
