// AVX2 (+FMA, F16C) gemm kernels. Every function that uses AVX2 carries GENIEX_AVX2 and lives in
// an anonymous namespace, so nothing compiled for AVX2 can be picked by the linker for code that
// runs before dispatch. Integer block dots are exact (maddubs/madd never saturate for these
// value ranges); only the float accumulation order differs from quant::vec_dot_ref.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/kernels/vec_dot_internal.h"
#include "core/fp16.h"
#include "quant/quant_types.h"

#define GENIEX_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace geniex::cpu::detail {
namespace {

using quant::kQK;

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

GENIEX_AVX2 inline float f16(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

GENIEX_AVX2 inline __m256i loadu256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

GENIEX_AVX2 inline __m128i loadu128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

GENIEX_AVX2 inline float hsum128(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

GENIEX_AVX2 inline float hsum(__m256 v) {
  return hsum128(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

// 16 packed bytes -> 32 bytes: low nibbles (elements 0..15) then high nibbles (16..31).
GENIEX_AVX2 inline __m256i bytes_from_nibbles(const uint8_t* p) {
  const __m128i t = loadu128(p);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

// 32 bits -> 32 bytes of 0xFF (bit set) or 0x00.
GENIEX_AVX2 inline __m256i bytes_from_bits(const uint8_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101,
                                         0x0000000000000000);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), shuf);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

// Σ x*y over byte pairs of signed x (|x| <= 128) and y (> -128), as 8 int32 lanes.
GENIEX_AVX2 inline __m256i dot_i8(__m256i x, __m256i y) {
  const __m256i ax = _mm256_sign_epi8(x, x);
  const __m256i sy = _mm256_sign_epi8(y, x);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

// Σ x*y for unsigned x (<= 127) and signed y.
GENIEX_AVX2 inline __m256i dot_u8_i8(__m256i x, __m256i y) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

// ---- 32-element blocks ------------------------------------------------------------------------

struct UnpackQ4_0 {
  static constexpr size_t kBytes = 18, kQs = 2;
  static constexpr bool kSigned = true, kMin = false;
  GENIEX_AVX2 static __m256i unpack(const uint8_t* b) {
    return _mm256_sub_epi8(bytes_from_nibbles(b + kQs), _mm256_set1_epi8(8));
  }
};

struct UnpackQ5_0 {
  static constexpr size_t kBytes = 22, kQs = 6;
  static constexpr bool kSigned = true, kMin = false;
  GENIEX_AVX2 static __m256i unpack(const uint8_t* b) {
    // (nibble | bit4) - 16 == nibble | (bit4 ? 0 : 0xF0) as int8.
    const __m256i hi = _mm256_andnot_si256(bytes_from_bits(b + 2), _mm256_set1_epi8(-16));
    return _mm256_or_si256(bytes_from_nibbles(b + kQs), hi);
  }
};

struct UnpackQ8_0 {
  static constexpr size_t kBytes = 34, kQs = 2;
  static constexpr bool kSigned = true, kMin = false;
  GENIEX_AVX2 static __m256i unpack(const uint8_t* b) { return loadu256(b + kQs); }
};

struct UnpackIQ4NL {
  static constexpr size_t kBytes = 18, kQs = 2;
  static constexpr bool kSigned = true, kMin = false;
  GENIEX_AVX2 static __m256i unpack(const uint8_t* b) {
    const __m128i v = loadu128(reinterpret_cast<const uint8_t*>(quant::kValuesIQ4NL));
    return _mm256_shuffle_epi8(_mm256_set_m128i(v, v), bytes_from_nibbles(b + kQs));
  }
};

struct UnpackQ4_1 {
  static constexpr size_t kBytes = 20, kQs = 4;
  static constexpr bool kSigned = false, kMin = true;
  GENIEX_AVX2 static __m256i unpack(const uint8_t* b) { return bytes_from_nibbles(b + kQs); }
};

struct UnpackQ5_1 {
  static constexpr size_t kBytes = 24, kQs = 8;
  static constexpr bool kSigned = false, kMin = true;
  GENIEX_AVX2 static __m256i unpack(const uint8_t* b) {
    const __m256i hi = _mm256_and_si256(bytes_from_bits(b + 4), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(bytes_from_nibbles(b + kQs), hi);
  }
};

// Weight blocks of U with Q8_0 activations (kMin: Q8_1 activations, plus m * s).
template <typename U>
struct LegacyKernel {
  static constexpr int kBlock = kQK;
  static constexpr size_t kBlockBytes = U::kBytes;
  static constexpr size_t kActBytes = U::kMin ? 36 : 34;
  static constexpr size_t kActQs = U::kMin ? 4 : 2;

  GENIEX_AVX2 static __m256i idot(__m256i q, __m256i y) {
    if constexpr (U::kSigned) {
      return dot_i8(q, y);
    } else {
      return dot_u8_i8(q, y);
    }
  }

  template <int NC>
  GENIEX_AVX2 static void run(size_t nb, const uint8_t* w, const uint8_t* const* a, float* res) {
    __m256 acc0[NC], acc1[NC];
    float summ[NC];
    for (int c = 0; c < NC; ++c) {
      acc0[c] = _mm256_setzero_ps();
      acc1[c] = _mm256_setzero_ps();
      summ[c] = 0.0f;
    }
    size_t ib = 0;
    for (; ib + 2 <= nb; ib += 2) {
      const uint8_t* x0 = w + ib * U::kBytes;
      const uint8_t* x1 = x0 + U::kBytes;
      const __m256i q0 = U::unpack(x0), q1 = U::unpack(x1);
      const float d0 = f16(x0), d1 = f16(x1);
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y0 = a[c] + ib * kActBytes;
        const uint8_t* y1 = y0 + kActBytes;
        const __m256 p0 = _mm256_cvtepi32_ps(idot(q0, loadu256(y0 + kActQs)));
        const __m256 p1 = _mm256_cvtepi32_ps(idot(q1, loadu256(y1 + kActQs)));
        acc0[c] = _mm256_fmadd_ps(_mm256_set1_ps(d0 * f16(y0)), p0, acc0[c]);
        acc1[c] = _mm256_fmadd_ps(_mm256_set1_ps(d1 * f16(y1)), p1, acc1[c]);
        if constexpr (U::kMin) summ[c] += f16(x0 + 2) * f16(y0 + 2) + f16(x1 + 2) * f16(y1 + 2);
      }
    }
    for (; ib < nb; ++ib) {
      const uint8_t* x0 = w + ib * U::kBytes;
      const __m256i q0 = U::unpack(x0);
      const float d0 = f16(x0);
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y0 = a[c] + ib * kActBytes;
        const __m256 p0 = _mm256_cvtepi32_ps(idot(q0, loadu256(y0 + kActQs)));
        acc0[c] = _mm256_fmadd_ps(_mm256_set1_ps(d0 * f16(y0)), p0, acc0[c]);
        if constexpr (U::kMin) summ[c] += f16(x0 + 2) * f16(y0 + 2);
      }
    }
    for (int c = 0; c < NC; ++c) res[c] = hsum(_mm256_add_ps(acc0[c], acc1[c])) + summ[c];
  }
};

// ---- K-quants (Q8_K activations: f32 d @0, qs @4, int16 bsums[16] @260) ----------------------

constexpr size_t kQ8KBytes = 292, kQ8KQs = 4, kQ8KBsums = 260;

// The 12 packed bytes of Q4_K/Q5_K 6-bit scales and mins -> 8 scales then 8 mins, as bytes.
inline void unpack_k4_scales(const uint8_t* s, uint32_t* utmp) {
  constexpr uint32_t kM1 = 0x3f3f3f3f, kM2 = 0x0f0f0f0f, kM3 = 0x03030303;
  std::memcpy(utmp, s, 12);
  utmp[3] = ((utmp[2] >> 4) & kM2) | (((utmp[1] >> 6) & kM3) << 4);
  const uint32_t uaux = utmp[1] & kM1;
  utmp[1] = (utmp[2] & kM2) | (((utmp[0] >> 6) & kM3) << 4);
  utmp[2] = uaux;
  utmp[0] &= kM1;
}

// Q4_K (kHigh = false: 144-byte blocks) and Q5_K (kHigh: 176-byte blocks with qh @16).
template <bool kHigh>
struct Q45KKernel {
  static constexpr int kBlock = quant::kQK_K;
  static constexpr size_t kBlockBytes = kHigh ? 176 : 144;
  static constexpr size_t kQs = kHigh ? 48 : 16;

  template <int NC>
  GENIEX_AVX2 static void run(size_t nb, const uint8_t* w, const uint8_t* const* a, float* res) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[NC];
    __m128 accm[NC];
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm256_setzero_ps();
      accm[c] = _mm_setzero_ps();
    }
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * kBlockBytes;
      const float d = f16(x), dmin = f16(x + 2);
      uint32_t utmp[4];
      unpack_k4_scales(x + 4, utmp);
      const __m256i mins_and_scales =
          _mm256_cvtepu8_epi16(_mm_set_epi32(static_cast<int>(utmp[3]), static_cast<int>(utmp[2]),
                                             static_cast<int>(utmp[1]), static_cast<int>(utmp[0])));
      const __m128i sc128 = _mm256_castsi256_si128(mins_and_scales);
      const __m256i scales = _mm256_set_m128i(sc128, sc128);
      const __m128i mins = _mm256_extracti128_si256(mins_and_scales, 1);
      __m256i hbits = _mm256_setzero_si256();
      if constexpr (kHigh) hbits = loadu256(x + 16);
      __m256i sumi[NC];
      for (int c = 0; c < NC; ++c) sumi[c] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i scale_l = _mm256_shuffle_epi8(
            scales, _mm256_set1_epi16(static_cast<short>(((4 * j + 1) << 8) | (4 * j))));
        const __m256i scale_h = _mm256_shuffle_epi8(
            scales, _mm256_set1_epi16(static_cast<short>(((4 * j + 3) << 8) | (4 * j + 2))));
        const __m256i bits = loadu256(x + kQs + 32 * j);
        __m256i ql = _mm256_and_si256(bits, m4);
        __m256i qh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        if constexpr (kHigh) {
          const __m256i one = _mm256_set1_epi8(1);
          ql = _mm256_or_si256(
              ql, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), one), 4));
          qh = _mm256_or_si256(
              qh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), one), 4));
        }
        for (int c = 0; c < NC; ++c) {
          const uint8_t* y = a[c] + ib * kQ8KBytes + kQ8KQs + 64 * j;
          const __m256i pl = _mm256_madd_epi16(scale_l, _mm256_maddubs_epi16(ql, loadu256(y)));
          const __m256i ph = _mm256_madd_epi16(scale_h, _mm256_maddubs_epi16(qh, loadu256(y + 32)));
          sumi[c] = _mm256_add_epi32(sumi[c], _mm256_add_epi32(pl, ph));
        }
      }
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kQ8KBytes;
        const float dy = load_f32(y);
        const __m256i bs = loadu256(y + kQ8KBsums);
        const __m128i q8s =
            _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m128i prod = _mm_madd_epi16(mins, q8s);
        accm[c] = _mm_fmadd_ps(_mm_set1_ps(dy * dmin), _mm_cvtepi32_ps(prod), accm[c]);
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dy * d), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) res[c] = hsum(acc[c]) - hsum128(accm[c]);
  }
};

// Q6_K: ql[128] @0, qh[64] @128, int8 scales[16] @192, f16 d @208. The -32 offset is applied
// once per block through the activation bsums: Σ sc*(q-32)*a = Σ sc*q*a - 32 Σ sc*bsum.
struct Q6KKernel {
  static constexpr int kBlock = quant::kQK_K;
  static constexpr size_t kBlockBytes = 210;

  template <int NC>
  GENIEX_AVX2 static void run(size_t nb, const uint8_t* w, const uint8_t* const* a, float* res) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * kBlockBytes;
      const float d = f16(x + 208);
      const __m128i sc8 = loadu128(x + 192);
      __m256i sumi[NC];
      for (int c = 0; c < NC; ++c) sumi[c] = _mm256_setzero_si256();
      for (int j = 0; j < 2; ++j) {
        const __m256i b1 = loadu256(x + 64 * j);
        const __m256i b2 = loadu256(x + 64 * j + 32);
        const __m256i bh = loadu256(x + 128 + 32 * j);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(b1, m4),
                               _mm256_slli_epi16(_mm256_and_si256(bh, m2), 4));
        q[1] =
            _mm256_or_si256(_mm256_and_si256(b2, m4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bh, 2), m2), 4));
        q[2] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bh, 4), m2), 4));
        q[3] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bh, 6), m2), 4));
        for (int e = 0; e < 4; ++e) {
          const int is = 8 * j + 2 * e;  // scales of elements [16 is, 16 is + 32)
          const __m128i shuf =
              _mm_set_epi64x(0x0101010101010101LL * (is + 1), 0x0101010101010101LL * is);
          const __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, shuf));
          for (int c = 0; c < NC; ++c) {
            const uint8_t* y = a[c] + ib * kQ8KBytes + kQ8KQs + 128 * j + 32 * e;
            sumi[c] = _mm256_add_epi32(
                sumi[c], _mm256_madd_epi16(sc, _mm256_maddubs_epi16(q[e], loadu256(y))));
          }
        }
      }
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kQ8KBytes;
        const __m256i corr = _mm256_madd_epi16(sc16, loadu256(y + kQ8KBsums));
        const __m256i s = _mm256_sub_epi32(sumi[c], _mm256_slli_epi32(corr, 5));
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * load_f32(y)), _mm256_cvtepi32_ps(s), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) res[c] = hsum(acc[c]);
  }
};

// ---- float types (activations of the same type) -----------------------------------------------

struct LoadF32 {
  static constexpr size_t kBytes = 4;
  GENIEX_AVX2 static __m256 load8(const uint8_t* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
  static float load1(const uint8_t* p) { return load_f32(p); }
};

struct LoadF16 {
  static constexpr size_t kBytes = 2;
  GENIEX_AVX2 static __m256 load8(const uint8_t* p) { return _mm256_cvtph_ps(loadu128(p)); }
  static float load1(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
};

struct LoadBF16 {
  static constexpr size_t kBytes = 2;
  GENIEX_AVX2 static __m256 load8(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16));
  }
  static float load1(const uint8_t* p) { return bf16_to_fp32(load_u16(p)); }
};

template <typename L>
struct FloatKernel {
  static constexpr int kBlock = 1;
  static constexpr size_t kBlockBytes = L::kBytes;

  template <int NC>
  GENIEX_AVX2 static void run(size_t n, const uint8_t* w, const uint8_t* const* a, float* res) {
    constexpr size_t kB = L::kBytes;
    __m256 acc0[NC], acc1[NC];
    for (int c = 0; c < NC; ++c) {
      acc0[c] = _mm256_setzero_ps();
      acc1[c] = _mm256_setzero_ps();
    }
    size_t k = 0;
    for (; k + 16 <= n; k += 16) {
      const __m256 w0 = L::load8(w + k * kB), w1 = L::load8(w + (k + 8) * kB);
      for (int c = 0; c < NC; ++c) {
        acc0[c] = _mm256_fmadd_ps(w0, L::load8(a[c] + k * kB), acc0[c]);
        acc1[c] = _mm256_fmadd_ps(w1, L::load8(a[c] + (k + 8) * kB), acc1[c]);
      }
    }
    for (; k + 8 <= n; k += 8) {
      const __m256 w0 = L::load8(w + k * kB);
      for (int c = 0; c < NC; ++c) acc0[c] = _mm256_fmadd_ps(w0, L::load8(a[c] + k * kB), acc0[c]);
    }
    for (int c = 0; c < NC; ++c) {
      float s = hsum(_mm256_add_ps(acc0[c], acc1[c]));
      for (size_t t = k; t < n; ++t) s += L::load1(w + t * kB) * L::load1(a[c] + t * kB);
      res[c] = s;
    }
  }
};

}  // namespace

GemmFn avx2_gemm(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return gemm_tiles<FloatKernel<LoadF32>>;
    case GgmlType::kF16: return gemm_tiles<FloatKernel<LoadF16>>;
    case GgmlType::kBF16: return gemm_tiles<FloatKernel<LoadBF16>>;
    case GgmlType::kQ4_0: return gemm_tiles<LegacyKernel<UnpackQ4_0>>;
    case GgmlType::kQ4_1: return gemm_tiles<LegacyKernel<UnpackQ4_1>>;
    case GgmlType::kQ5_0: return gemm_tiles<LegacyKernel<UnpackQ5_0>>;
    case GgmlType::kQ5_1: return gemm_tiles<LegacyKernel<UnpackQ5_1>>;
    case GgmlType::kQ8_0: return gemm_tiles<LegacyKernel<UnpackQ8_0>>;
    case GgmlType::kIQ4_NL: return gemm_tiles<LegacyKernel<UnpackIQ4NL>>;
    case GgmlType::kQ4_K: return gemm_tiles<Q45KKernel<false>>;
    case GgmlType::kQ5_K: return gemm_tiles<Q45KKernel<true>>;
    case GgmlType::kQ6_K: return gemm_tiles<Q6KKernel>;
    default: return nullptr;
  }
}

}  // namespace geniex::cpu::detail
