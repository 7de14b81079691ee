// x86 kernels, written once and instantiated by vec_dot_avx2.cpp (AVX2 + FMA + F16C) and
// vec_dot_avx512.cpp (the same plus AVX-512 F/BW/VL/VNNI: ymm vpdpbusd replaces maddubs + madd).
// Before including, define GENIEX_X86_TARGET (the function target attribute) and GENIEX_X86_VNNI
// (0/1), inside a distinct anonymous namespace: nothing compiled for an ISA can then be picked by
// the linker for code that runs before dispatch. Integer block dots are exact (maddubs/madd never
// saturate for these value ranges); only the float accumulation order differs from
// quant::vec_dot_ref.
// NOLINT(build/header_guard): included once per target on purpose.

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

GENIEX_X86_TARGET inline float f16(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

GENIEX_X86_TARGET inline __m256i loadu256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

GENIEX_X86_TARGET inline __m128i loadu128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

GENIEX_X86_TARGET inline float hsum128(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

GENIEX_X86_TARGET inline float hsum(__m256 v) {
  return hsum128(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

// 16 packed bytes -> 32 bytes: low nibbles (elements 0..15) then high nibbles (16..31).
GENIEX_X86_TARGET inline __m256i bytes_from_nibbles(const uint8_t* p) {
  const __m128i t = loadu128(p);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

// 32 bits -> 32 bytes of 0xFF (bit set) or 0x00.
GENIEX_X86_TARGET inline __m256i bytes_from_bits(const uint8_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101,
                                         0x0000000000000000);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x)), shuf);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

// Σ x*y per group of 4 bytes (8 int32 lanes) for unsigned x and signed y. With AVX2 (maddubs)
// every pair sum x0*y0 + x1*y1 must fit int16: true for x <= 128 and y > -128, the ranges here.
GENIEX_X86_TARGET inline __m256i dot_u8_i8(__m256i x, __m256i y) {
#if GENIEX_X86_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), x, y);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
#endif
}

// acc + madd_epi16(a, b) (one vpdpwssd with VNNI).
GENIEX_X86_TARGET inline __m256i madd_acc(__m256i acc, __m256i a, __m256i b) {
#if GENIEX_X86_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// Σ x*y for signed x (|x| <= 128) and signed y (> -128), given ax = |x|: |x| * (y * sign(x)).
GENIEX_X86_TARGET inline __m256i dot_i8_abs(__m256i ax, __m256i x, __m256i y) {
  return dot_u8_i8(ax, _mm256_sign_epi8(y, x));
}

// ---- 32-element blocks ------------------------------------------------------------------------

// Each unpack() gives the block's 32 weights as bytes, in one of three forms:
//  kOffset > 0: unsigned u = q + kOffset; the kernel subtracts kOffset * Σ(activation block),
//               from the per-block activation sums (ActSums), so u feeds maddubs/vpdpbusd as is;
//  kSigned:     signed q (the |q| / sign(y, q) trick);
//  kMin:        unsigned q of a type with a min (m * s term from the Q8_1 activations).
struct UnpackQ4_0 {
  static constexpr size_t kBytes = 18, kQs = 2;
  static constexpr int kOffset = 8;
  static constexpr bool kSigned = false, kMin = false;
  GENIEX_X86_TARGET static __m256i unpack(const uint8_t* b) { return bytes_from_nibbles(b + kQs); }
};

struct UnpackQ5_0 {
  static constexpr size_t kBytes = 22, kQs = 6;
  static constexpr int kOffset = 16;
  static constexpr bool kSigned = false, kMin = false;
  GENIEX_X86_TARGET static __m256i unpack(const uint8_t* b) {  // nibble | bit4 << 4
#if GENIEX_X86_VNNI
    uint32_t h;
    std::memcpy(&h, b + 2, 4);
    const __m256i nib = bytes_from_nibbles(b + kQs);
    return _mm256_mask_add_epi8(nib, h, nib, _mm256_set1_epi8(0x10));
#else
    const __m256i hi = _mm256_and_si256(bytes_from_bits(b + 2), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(bytes_from_nibbles(b + kQs), hi);
#endif
  }
};

// With VNNI, q + 128 (0..255) feeds vpdpbusd directly; maddubs would saturate at that range, so
// AVX2 keeps the sign trick.
struct UnpackQ8_0 {
  static constexpr size_t kBytes = 34, kQs = 2;
  static constexpr int kOffset = GENIEX_X86_VNNI ? 128 : 0;
  static constexpr bool kSigned = kOffset == 0, kMin = false;
  GENIEX_X86_TARGET static __m256i unpack(const uint8_t* b) {
    if constexpr (kOffset != 0) {
      return _mm256_xor_si256(loadu256(b + kQs), _mm256_set1_epi8(static_cast<char>(0x80)));
    } else {
      return loadu256(b + kQs);
    }
  }
};

struct UnpackIQ4NL {
  static constexpr size_t kBytes = 18, kQs = 2;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = true, kMin = false;
  GENIEX_X86_TARGET static __m256i unpack(const uint8_t* b) {
    const __m128i v = loadu128(reinterpret_cast<const uint8_t*>(quant::kValuesIQ4NL));
    return _mm256_shuffle_epi8(_mm256_set_m128i(v, v), bytes_from_nibbles(b + kQs));
  }
};

struct UnpackQ4_1 {
  static constexpr size_t kBytes = 20, kQs = 4;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  GENIEX_X86_TARGET static __m256i unpack(const uint8_t* b) { return bytes_from_nibbles(b + kQs); }
};

struct UnpackQ5_1 {
  static constexpr size_t kBytes = 24, kQs = 8;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = false, kMin = true;
  GENIEX_X86_TARGET static __m256i unpack(const uint8_t* b) {
#if GENIEX_X86_VNNI
    uint32_t h;
    std::memcpy(&h, b + 4, 4);
    const __m256i nib = bytes_from_nibbles(b + kQs);
    return _mm256_mask_add_epi8(nib, h, nib, _mm256_set1_epi8(0x10));
#else
    const __m256i hi = _mm256_and_si256(bytes_from_bits(b + 4), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(bytes_from_nibbles(b + kQs), hi);
#endif
  }
};

// f16 values at p + r * stride (r < NR) -> float lanes 0..NR-1 (the others 0).
template <int NR>
GENIEX_X86_TARGET inline __m128 f16_rows(const uint8_t* p, size_t stride) {
  uint64_t bits = 0;
  for (int r = 0; r < NR; ++r) bits |= uint64_t{load_u16(p + r * stride)} << (16 * r);
  return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(bits)));
}

// Weight blocks of U with Q8_0 activations (kMin: Q8_1 activations, plus m * s), NR <= 4 weight
// rows at a time: each activation block is loaded once per NR rows and each unpacked weight block
// is used for NC activation rows. The NR rows' int32 block dots are folded into one vector with
// hadd ([r0 r1 r2 r3 | r0 r1 r2 r3] partial sums), so converting and scaling costs one cvt and one
// fma per block and activation row for all NR rows; the NR weight scales are converted together.
template <typename U>
struct LegacyKernel {
  static constexpr int kBlock = kQK;
  static constexpr size_t kBlockBytes = U::kBytes;
  static constexpr size_t kActBytes = U::kMin ? 36 : 34;
  static constexpr size_t kActQs = U::kMin ? 4 : 2;
  static constexpr bool kActSums = U::kOffset != 0;
  static constexpr int kOffsetShift = U::kOffset == 8 ? 3 : U::kOffset == 16 ? 4 : 7;
  static_assert(U::kOffset == 0 || (1 << kOffsetShift) == U::kOffset);

  // sums[ib] = Σ of the qs of activation block ib (used when kActSums).
  GENIEX_X86_TARGET static void act_sums(size_t nb, const uint8_t* y, int32_t* sums) {
    for (size_t ib = 0; ib < nb; ++ib, y += kActBytes) {
      const __m256i s = dot_u8_i8(_mm256_set1_epi8(1), loadu256(y + kActQs));
      const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
      const __m128i u = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
      sums[ib] = _mm_cvtsi128_si32(_mm_add_epi32(u, _mm_shuffle_epi32(u, 0xB1)));
    }
  }

  // The block's integer dot, without the kOffset correction.
  GENIEX_X86_TARGET static __m256i block_dot(const uint8_t* x, __m256i yq) {
    const __m256i q = U::unpack(x);
    if constexpr (U::kSigned) {
      return dot_i8_abs(_mm256_sign_epi8(q, q), q, yq);
    } else {
      return dot_u8_i8(q, yq);
    }
  }

  // nc = 1: one weight row, 4 consecutive blocks per step folded with hadd (a single linear
  // stream per row, which the hardware prefetcher follows best); scales of 4 blocks converted
  // together.
  GENIEX_X86_TARGET static float run_gemv(size_t nb, const uint8_t* x, const uint8_t* y,
                                          const int32_t* sums) {
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    size_t ib = 0;
    for (; ib + 4 <= nb; ib += 4, x += 4 * U::kBytes, y += 4 * kActBytes) {
      __m256i p[4];
      for (int k = 0; k < 4; ++k) {
        p[k] = block_dot(x + k * U::kBytes, loadu256(y + k * kActBytes + kActQs));
      }
      __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
      if constexpr (kActSums) {  // lanes 0..3 are blocks ib..ib+3
        const __m128i corr = _mm_slli_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(sums + ib)), kOffsetShift);
        h = _mm256_sub_epi32(h, _mm256_zextsi128_si256(corr));
      }
      const __m128 s = _mm_mul_ps(f16_rows<4>(x, U::kBytes), f16_rows<4>(y, kActBytes));
      acc = _mm256_fmadd_ps(_mm256_set_m128(s, s), _mm256_cvtepi32_ps(h), acc);
      if constexpr (U::kMin) {
        accm = _mm_fmadd_ps(f16_rows<4>(x + 2, U::kBytes), f16_rows<4>(y + 2, kActBytes), accm);
      }
    }
    for (; ib < nb; ++ib, x += U::kBytes, y += kActBytes) {
      __m256i p = block_dot(x, loadu256(y + kActQs));
      if constexpr (kActSums) {
        p = _mm256_sub_epi32(p, _mm256_zextsi128_si256(_mm_cvtsi32_si128(sums[ib] * U::kOffset)));
      }
      acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(x) * f16(y)), _mm256_cvtepi32_ps(p), acc);
      if constexpr (U::kMin) accm = _mm_add_ss(accm, _mm_set_ss(f16(x + 2) * f16(y + 2)));
    }
    return hsum(acc) + hsum128(accm);
  }

  // res[c * kMaxTileRows + r] = dot(weight row r at w + r * ws, activation row c).
  template <int NR, int NC>
  GENIEX_X86_TARGET static void run(size_t nb, const uint8_t* w, size_t ws, const uint8_t* const* a,
                                    float* res) {
    __m256 acc[NC];
    __m128 accm[NC];
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm256_setzero_ps();
      accm[c] = _mm_setzero_ps();
    }
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * U::kBytes;
      __m256i q[NR], aq[NR];
      for (int r = 0; r < NR; ++r) {
        q[r] = U::unpack(x + r * ws);
        aq[r] = U::kSigned ? _mm256_sign_epi8(q[r], q[r]) : q[r];
      }
      const __m128 dw = f16_rows<NR>(x, ws);
      const __m256 dw2 = _mm256_set_m128(dw, dw);
      __m128 mw = _mm_setzero_ps();
      if constexpr (U::kMin) mw = f16_rows<NR>(x + 2, ws);
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kActBytes;
        const __m256i yq = loadu256(y + kActQs);
        // kOffset: Σ (u - off) y = Σ u y - off Σ y, the second term folded in per activation
        // block (int16 pairs with AVX2, the vpdpbusd accumulator with VNNI).
        [[maybe_unused]] __m256i corr = _mm256_setzero_si256();
        if constexpr (kActSums) {
#if GENIEX_X86_VNNI
          corr = _mm256_sub_epi32(
              _mm256_setzero_si256(),
              _mm256_dpbusd_epi32(_mm256_setzero_si256(),
                                  _mm256_set1_epi8(static_cast<char>(U::kOffset)), yq));
#else
          corr = _mm256_maddubs_epi16(_mm256_set1_epi8(static_cast<char>(U::kOffset)), yq);
#endif
        }
        __m256i p[4];
        for (int r = 0; r < 4; ++r) {
          if (r >= NR) {
            p[r] = _mm256_setzero_si256();
          } else if constexpr (U::kSigned) {
            p[r] = dot_i8_abs(aq[r], q[r], yq);
          } else if constexpr (kActSums) {
#if GENIEX_X86_VNNI
            p[r] = _mm256_dpbusd_epi32(corr, aq[r], yq);
#else
            p[r] = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(aq[r], yq), corr),
                                     _mm256_set1_epi16(1));
#endif
          } else {
            p[r] = dot_u8_i8(aq[r], yq);
          }
        }
        __m256i h;
        if constexpr (NR == 1) {
          h = p[0];
        } else {
          h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
        }
        if constexpr (NR == 1) {
          acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(_mm_cvtss_f32(dw) * f16(y)),
                                   _mm256_cvtepi32_ps(h), acc[c]);
        } else {
          const __m256 s = _mm256_mul_ps(dw2, _mm256_set1_ps(f16(y)));
          acc[c] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(h), acc[c]);
        }
        if constexpr (U::kMin) accm[c] = _mm_fmadd_ps(mw, _mm_set1_ps(f16(y + 2)), accm[c]);
      }
    }
    for (int c = 0; c < NC; ++c) {
      if constexpr (NR == 1) {
        res[c * kMaxTileRows] = hsum(acc[c]) + _mm_cvtss_f32(accm[c]);
      } else {
        __m128 t = _mm_add_ps(_mm256_castps256_ps128(acc[c]), _mm256_extractf128_ps(acc[c], 1));
        t = _mm_add_ps(t, accm[c]);
        float tmp[4];
        _mm_storeu_ps(tmp, t);
        for (int r = 0; r < NR; ++r) res[c * kMaxTileRows + r] = tmp[r];
      }
    }
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
  // GEMV: each block's lines are prefetched as the block is reached (see Q6KKernel).
  static constexpr bool kPrefetchesBlocks = true;

  template <int NC>
  GENIEX_X86_TARGET static void run(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                    float* res) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[NC];
    __m128 accm[NC];
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm256_setzero_ps();
      accm[c] = _mm_setzero_ps();
    }
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * kBlockBytes;
      if constexpr (NC == 1) stream_prefetch(x, kBlockBytes);
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
          sumi[c] = madd_acc(sumi[c], scale_l, _mm256_maddubs_epi16(ql, loadu256(y)));
          sumi[c] = madd_acc(sumi[c], scale_h, _mm256_maddubs_epi16(qh, loadu256(y + 32)));
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
// Shifts and shuffles share few ports on Zen 3, so the unpacking keeps them few: the two high
// bits of quant group e sit at bits 2e of qh and are moved straight to bits 4-5
// ((qh << (4 - 2e)) & 0x30, 16-bit shifts whose spill into the next byte the mask drops). The
// 16 int8 sub-block scales are reordered once per block (even sub-blocks, then odd) and widened,
// so the int16 lanes of the low half hold the scales of the first 16 elements of each 32-element
// group and the high half those of the second 16: each group's scale vector is then one in-lane
// vpshufb (a per-group vpermd costs about twice as much on Zen 3).
struct Q6KKernel {
  static constexpr int kBlock = quant::kQK_K;
  static constexpr size_t kBlockBytes = 210;
  // GEMV: each block's lines gemv_prefetch_bytes() bytes ahead are requested as the block is
  // reached, instead of a whole row's at its start (gemm_tiles).
  static constexpr bool kPrefetchesBlocks = true;

  // The 6-bit values of one half (j = 0, 1) of block `x` as 4 x 32 unsigned bytes: group 4j + e
  // in q[e] (low nibbles from the ql bytes, high 2 bits from qh).
  GENIEX_X86_TARGET static void unpack(const uint8_t* x, int j, __m256i m4, __m256i m30,
                                       __m256i q[4]) {
    const __m256i b1 = loadu256(x + 64 * j);
    const __m256i b2 = loadu256(x + 64 * j + 32);
    const __m256i bh = loadu256(x + 128 + 32 * j);
    q[0] =
        _mm256_or_si256(_mm256_and_si256(b1, m4), _mm256_and_si256(_mm256_slli_epi16(bh, 4), m30));
    q[1] =
        _mm256_or_si256(_mm256_and_si256(b2, m4), _mm256_and_si256(_mm256_slli_epi16(bh, 2), m30));
    q[2] =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m4), _mm256_and_si256(bh, m30));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(bh, 2), m30));
  }

  // The block's 16 int8 scales as int16: lane g scale 2g (the first 16 elements of group g),
  // lane 8 + g scale 2g + 1.
  GENIEX_X86_TARGET static __m256i even_odd_scales(__m128i sc8) {
    return _mm256_cvtepi8_epi16(
        _mm_shuffle_epi8(sc8, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)));
  }

  // With few activation rows the 8 accumulations of a block into one sum would be one chain of
  // dependent vpdpwssd (VNNI's madd_acc, ~4 cycles each): the GEMV ran at ~20 GB/s, bound by
  // that latency. kSplit independent partial sums instead, added at the end of the block: integer
  // sums, so the same bits.
  template <int NC>
  GENIEX_X86_TARGET static void run(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                    float* res) {
    constexpr int kSplit = NC == 1 ? 4 : NC == 2 ? 2 : 1;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m30 = _mm256_set1_epi8(0x30);
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * kBlockBytes;
      if constexpr (NC == 1) stream_prefetch(x, kBlockBytes);
      const float d = f16(x + 208);
      const __m128i sc8 = loadu128(x + 192);
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
      const __m256i sc_eo = even_odd_scales(sc8);
      __m256i sumi[NC][kSplit];
      for (int c = 0; c < NC; ++c) {
        for (int i = 0; i < kSplit; ++i) sumi[c][i] = _mm256_setzero_si256();
      }
      for (int j = 0; j < 2; ++j) {
        __m256i q[4];
        unpack(x, j, m4, m30, q);
        for (int e = 0; e < 4; ++e) {
          // Group g = 4j + e (elements [32 g, 32 g + 32)): int16 lane g of each half of sc_eo
          // broadcast over that half, i.e. scale 2g for 8 lanes, then 2g + 1.
          const int g = 4 * j + e;
          const __m256i sc = _mm256_shuffle_epi8(
              sc_eo, _mm256_set1_epi16(static_cast<short>(((2 * g + 1) << 8) | (2 * g))));
          for (int c = 0; c < NC; ++c) {
            const uint8_t* y = a[c] + ib * kQ8KBytes + kQ8KQs + 128 * j + 32 * e;
            __m256i& s = sumi[c][g % kSplit];
            s = madd_acc(s, sc, _mm256_maddubs_epi16(q[e], loadu256(y)));
          }
        }
      }
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kQ8KBytes;
        const __m256i corr = _mm256_madd_epi16(sc16, loadu256(y + kQ8KBsums));
        __m256i t = sumi[c][0];
        for (int i = 1; i < kSplit; ++i) t = _mm256_add_epi32(t, sumi[c][i]);
        const __m256i s = _mm256_sub_epi32(t, _mm256_slli_epi32(corr, 5));
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * load_f32(y)), _mm256_cvtepi32_ps(s), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) res[c] = hsum(acc[c]);
  }

  // GEMV over G weight rows (gemm_tiles' lockstep streams) against one activation row, block by
  // block: each row's arithmetic is run<1>'s (integer partial sums, then the same float ops in
  // the same order), so the same bits, while the rows' chains overlap and share the activation
  // loads and the per-call overhead of a 4-block row (K = 1024) is paid once per G rows.
  template <int G>
  GENIEX_X86_TARGET static void run_gemv_rows(size_t nb, const uint8_t* const* w, const uint8_t* a,
                                              float* res) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m30 = _mm256_set1_epi8(0x30);
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* ya = a + ib * kQ8KBytes;
      const float dy = load_f32(ya);
      const __m256i bsums = loadu256(ya + kQ8KBsums);
      for (int g = 0; g < G; ++g) {
        const uint8_t* x = w[g] + ib * kBlockBytes;
        stream_prefetch(x, kBlockBytes);
        const float d = f16(x + 208);
        const __m128i sc8 = loadu128(x + 192);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const __m256i sc_eo = even_odd_scales(sc8);
        __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int j = 0; j < 2; ++j) {
          __m256i q[4];
          unpack(x, j, m4, m30, q);
          for (int e = 0; e < 4; ++e) {
            const int gr = 4 * j + e;
            const __m256i sc = _mm256_shuffle_epi8(
                sc_eo, _mm256_set1_epi16(static_cast<short>(((2 * gr + 1) << 8) | (2 * gr))));
            const uint8_t* y = ya + kQ8KQs + 128 * j + 32 * e;
            __m256i& acc_i = sumi[e & 1];
            acc_i = madd_acc(acc_i, sc, _mm256_maddubs_epi16(q[e], loadu256(y)));
          }
        }
        const __m256i corr = _mm256_madd_epi16(sc16, bsums);
        const __m256i t = _mm256_add_epi32(sumi[0], sumi[1]);
        const __m256i sv = _mm256_sub_epi32(t, _mm256_slli_epi32(corr, 5));
        acc[g] = _mm256_fmadd_ps(_mm256_set1_ps(d * dy), _mm256_cvtepi32_ps(sv), acc[g]);
      }
    }
    for (int g = 0; g < G; ++g) res[g] = hsum(acc[g]);
  }
};

// ---- float types (activations of the same type) -----------------------------------------------

struct LoadF32 {
  static constexpr size_t kBytes = 4;
  GENIEX_X86_TARGET static __m256 load8(const uint8_t* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
  static float load1(const uint8_t* p) { return load_f32(p); }
};

struct LoadF16 {
  static constexpr size_t kBytes = 2;
  GENIEX_X86_TARGET static __m256 load8(const uint8_t* p) { return _mm256_cvtph_ps(loadu128(p)); }
  static float load1(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
};

struct LoadBF16 {
  static constexpr size_t kBytes = 2;
  GENIEX_X86_TARGET static __m256 load8(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16));
  }
  static float load1(const uint8_t* p) { return bf16_to_fp32(load_u16(p)); }
};

template <typename L>
struct FloatKernel {
  static constexpr int kBlock = 1;
  static constexpr size_t kBlockBytes = L::kBytes;

  template <int NC>
  GENIEX_X86_TARGET static void run(size_t n, const uint8_t* w, const uint8_t* const* a,
                                    float* res) {
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

#if GENIEX_X86_VNNI
// F16 weights and activations with AVX-512, for gemm_rows: NR weight rows x NC activation rows
// per pass, each weight and activation vector converted once for all the dots it feeds. Every dot
// is FloatKernel<LoadF16>::run's arithmetic: one zmm holds its two 8-lane accumulators (lanes
// 0-7: acc0, 8-15: acc1, the same fma per lane), split back before the 8-element step, the hsum
// and the scalar tail; so GEMM tiles and the GEMV give the bits of the one-row kernel.
struct F16RowsKernel {
  static constexpr int kBlock = 1;
  static constexpr size_t kBlockBytes = 2;
  static constexpr size_t kActBytes = 2;
  static constexpr bool kActSums = false;

  template <int NR, int NC>
  GENIEX_X86_TARGET static void run(size_t n, const uint8_t* w, size_t ws, const uint8_t* const* a,
                                    float* res) {
    __m512 acc[NR][NC];
    for (int r = 0; r < NR; ++r) {
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    size_t k = 0;
    for (; k + 16 <= n; k += 16) {
      __m512 wv[NR];
      for (int r = 0; r < NR; ++r) wv[r] = _mm512_cvtph_ps(loadu256(w + r * ws + k * 2));
      for (int c = 0; c < NC; ++c) {
        const __m512 av = _mm512_cvtph_ps(loadu256(a[c] + k * 2));
        for (int r = 0; r < NR; ++r) acc[r][c] = _mm512_fmadd_ps(wv[r], av, acc[r][c]);
      }
    }
    for (int r = 0; r < NR; ++r) {
      for (int c = 0; c < NC; ++c)
        res[c * kMaxTileRows + r] = finish(acc[r][c], k, n, w + r * ws, a[c]);
    }
  }

  // The end of one dot whose 16-lane accumulator covers elements [0, k): split into the two
  // 8-lane chains, the 8-element step, the hsum and the scalar tail.
  GENIEX_X86_TARGET static float finish(__m512 acc, size_t k, size_t n, const uint8_t* wr,
                                        const uint8_t* ar) {
    __m256 acc0 = _mm512_castps512_ps256(acc);
    const __m256 acc1 = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
    size_t kk = k;
    for (; kk + 8 <= n; kk += 8) {
      acc0 = _mm256_fmadd_ps(LoadF16::load8(wr + kk * 2), LoadF16::load8(ar + kk * 2), acc0);
    }
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    for (size_t t = kk; t < n; ++t) sum += LoadF16::load1(wr + t * 2) * LoadF16::load1(ar + t * 2);
    return sum;
  }

  // NR weight rows already widened to F32 (wf, row stride ldw floats, elements [0, n16)) x NC
  // F16 activation rows: each activation vector converted once for NR rows, each weight vector
  // a plain load. The same fmas per lane as run, so the same bits.
  template <int NR, int NC>
  GENIEX_X86_TARGET static void run_f32w(size_t n, size_t n16, const float* wf, size_t ldw,
                                         const uint8_t* w, size_t ws, const uint8_t* const* a,
                                         float* o, size_t os) {
    __m512 acc[NR][NC];
    for (int r = 0; r < NR; ++r) {
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    for (size_t k = 0; k < n16; k += 16) {
      __m512 av[NC];
      for (int c = 0; c < NC; ++c) av[c] = _mm512_cvtph_ps(loadu256(a[c] + k * 2));
      for (int r = 0; r < NR; ++r) {
        const __m512 wv = _mm512_loadu_ps(wf + r * ldw + k);
        for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_fmadd_ps(wv, av[c], acc[r][c]);
      }
    }
    if constexpr (NR == 4 && NC == 4) {
      if (n16 == n) {
        const __m512 s = reduce_4x4(acc);
        _mm_storeu_ps(o, _mm512_castps512_ps128(s));
        _mm_storeu_ps(o + os, _mm512_extractf32x4_ps(s, 1));
        _mm_storeu_ps(o + 2 * os, _mm512_extractf32x4_ps(s, 2));
        _mm_storeu_ps(o + 3 * os, _mm512_extractf32x4_ps(s, 3));
        return;
      }
    }
    for (int c = 0; c < NC; ++c) {
      for (int r = 0; r < NR; ++r) o[c * os + r] = finish(acc[r][c], n16, n, w + r * ws, a[c]);
    }
  }

  // The sixteen sums of a 4 x 4 tile of 16-lane accumulators (no tail), lane 4 c + r holding dot
  // (r, c): the reduction of finish for each dot (lanes i + 8, then i + 4, i + 2, i + 1 added in
  // the same pairs, so the same bits), done for all sixteen at once with shuffles between them.
  // [x lo8 + x hi8, y lo8 + y hi8]
  GENIEX_X86_TARGET static __m512 add_halves(__m512 x, __m512 y) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // Four 8-lane sums (two in x, two in y) -> four 4-lane sums, one per 128 bits.
  GENIEX_X86_TARGET static __m512 add_quarters(__m512 x, __m512 y) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  GENIEX_X86_TARGET static __m512 reduce_4x4(const __m512 (&acc)[4][4]) {
    __m512 v4[4];  // v4[r]: 128-bit lane c holds dot (r, c)'s four partial sums
    for (int r = 0; r < 4; ++r) {
      v4[r] = add_quarters(add_halves(acc[r][0], acc[r][1]), add_halves(acc[r][2], acc[r][3]));
    }
    // Per 128 bits: [x0 + x2, x1 + x3, y0 + y2, y1 + y3], then [u0 + u1, u2 + u3, v0 + v1, ...].
    const __m512 u = _mm512_add_ps(_mm512_shuffle_ps(v4[0], v4[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(v4[0], v4[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 v = _mm512_add_ps(_mm512_shuffle_ps(v4[2], v4[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(v4[2], v4[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(u, v, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(u, v, _MM_SHUFFLE(3, 1, 3, 1)));
  }

  // One row: FloatKernel<LoadF16>'s own (two ymm chains, latency-friendlier for a GEMV).
  GENIEX_X86_TARGET static float run_gemv(size_t n, const uint8_t* w, const uint8_t* a,
                                          const int32_t*) {
    float r[1];
    FloatKernel<LoadF16>::run<1>(n, w, &a, r);
    return r[0];
  }
};

// F16 micro-tile: kF16TileRows weight rows x kF16TileCols activation rows (6 x 4 measured the
// same: the zmm fmas are the limit once the weights are F32).
inline constexpr int kF16TileRows = 4;
inline constexpr int kF16TileCols = 4;

template <int NR>
GENIEX_X86_TARGET void f16_tile_nc(int nc, size_t n, size_t n16, const float* wf, size_t ldw,
                                   const uint8_t* w, size_t ws, const uint8_t* const* a, float* o,
                                   size_t os) {
  static_assert(kF16TileRows == 4 && kF16TileCols == 4);
  switch (nc) {
    case 4: F16RowsKernel::run_f32w<NR, 4>(n, n16, wf, ldw, w, ws, a, o, os); break;
    case 3: F16RowsKernel::run_f32w<NR, 3>(n, n16, wf, ldw, w, ws, a, o, os); break;
    case 2: F16RowsKernel::run_f32w<NR, 2>(n, n16, wf, ldw, w, ws, a, o, os); break;
    default: F16RowsKernel::run_f32w<NR, 1>(n, n16, wf, ldw, w, ws, a, o, os); break;
  }
}

// F16 GEMM for many activation rows: a panel of weight rows (about 48 KiB) is widened to F32 once
// into a thread-local buffer, and every group of kF16TileCols activation rows sweeps it, so the
// inner loop converts only activations (each once per kF16TileRows weight rows) and loads the
// weights as they are. Per dot the arithmetic of F16RowsKernel::run (and of the GEMV): the bits do
// not depend on how many rows are computed together. Fewer than 8 activation rows do not pay for
// the conversion and take gemm_rows<F16RowsKernel>. 64 x 64 tasks (op_matmul's), one thread, AMD
// EPYC AVX-512 (bench_matmul f16): K = 768 84 -> 96 GFLOP/s, K = 3072 92 -> 107.
GENIEX_X86_TARGET void gemm_f16(int64_t n, const uint8_t* w, size_t w_stride, int64_t nr,
                                const uint8_t* a, size_t a_stride, int64_t nc, float* out,
                                size_t out_stride) {
  const size_t n16 = static_cast<size_t>(n) / 16 * 16;
  if (nc < 8 || n16 == 0) {
    gemm_rows<F16RowsKernel>(n, w, w_stride, nr, a, a_stride, nc, out, out_stride);
    return;
  }
  constexpr int kR = kF16TileRows, kC = kF16TileCols;
  const int64_t panel =
      kR * std::max<int64_t>(1, static_cast<int64_t>((48u << 10) / (n16 * 4)) / kR);
  // Row stride n16 + 16 floats: rows 64 bytes apart modulo 4 KiB, not all in the same L1 sets.
  const size_t ld = n16 + 16;
  thread_local std::vector<float> buf;
  if (buf.size() < static_cast<size_t>(panel) * ld) buf.resize(static_cast<size_t>(panel) * ld);
  float* wf = buf.data();
  for (int64_t i0 = 0; i0 < nr; i0 += panel) {
    const int64_t i1 = std::min(nr, i0 + panel);
    for (int64_t i = i0; i < i1; ++i) {
      const uint8_t* wr = w + static_cast<size_t>(i) * w_stride;
      float* d = wf + static_cast<size_t>(i - i0) * ld;
      for (size_t k = 0; k < n16; k += 16) {
        _mm512_storeu_ps(d + k, _mm512_cvtph_ps(loadu256(wr + k * 2)));
      }
    }
    for (int64_t j0 = 0; j0 < nc; j0 += kC) {
      const int m = static_cast<int>(std::min<int64_t>(kC, nc - j0));
      const uint8_t* rows[kC];
      for (int c = 0; c < m; ++c) rows[c] = a + static_cast<size_t>(j0 + c) * a_stride;
      float* o = out + static_cast<size_t>(j0) * out_stride + i0;
      for (int64_t i = i0; i < i1; i += kR) {
        const int nrr = static_cast<int>(std::min<int64_t>(kR, i1 - i));
        const float* wp = wf + static_cast<size_t>(i - i0) * ld;
        const uint8_t* wr = w + static_cast<size_t>(i) * w_stride;
        float* oi = o + (i - i0);
        switch (nrr) {
          case 4: f16_tile_nc<4>(m, n, n16, wp, ld, wr, w_stride, rows, oi, out_stride); break;
          case 3: f16_tile_nc<3>(m, n, n16, wp, ld, wr, w_stride, rows, oi, out_stride); break;
          case 2: f16_tile_nc<2>(m, n, n16, wp, ld, wr, w_stride, rows, oi, out_stride); break;
          default: f16_tile_nc<1>(m, n, n16, wp, ld, wr, w_stride, rows, oi, out_stride); break;
        }
      }
    }
  }
}
#endif  // GENIEX_X86_VNNI

// ---- activation quantization (bit-identical to quant::quantize_row) ---------------------------
#if !GENIEX_X86_VNNI

// 4 x 8 int32 (each in int8 range) -> 32 int8 in element order.
GENIEX_X86_TARGET inline __m256i pack_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

GENIEX_X86_TARGET inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Lanes that are NaN or +-Inf, given |x|.
GENIEX_X86_TARGET inline __m256 not_finite(__m256 ax) {
  return _mm256_cmp_ps(ax, _mm256_set1_ps(std::numeric_limits<float>::max()), _CMP_NLE_UQ);
}

// Q8_0: d = amax / 127, q = round-half-away(x * (1 / d)). trunc(v + copysign(0.49999997, v)) is
// round-half-away for every float in int32 range (checked exhaustively). Blocks with a NaN/Inf or
// a 1/d that overflows (where the reference wraps or saturates) go to the reference itself.
GENIEX_X86_TARGET void quantize_q8_0(const float* x, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 half = _mm256_set1_ps(0.49999997f);
  for (int64_t ib = 0; ib < n / kQK; ++ib, x += kQK, out += 34) {
    __m256 v[4];
    __m256 m = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + 8 * k);
      const __m256 ax = _mm256_andnot_ps(sign, v[k]);
      m = _mm256_max_ps(m, ax);
      bad = _mm256_or_ps(bad, not_finite(ax));
    }
    const float d = hmax(m) / 127.0f;
    const float id = d == 0.0f ? 0.0f : 1.0f / d;
    if (_mm256_movemask_ps(bad) != 0 || !(id <= std::numeric_limits<float>::max())) {
      quant::detail::quantize_q8_0(x, out, 1);
      continue;
    }
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      const __m256 p = _mm256_mul_ps(v[k], vid);
      q[k] = _mm256_cvttps_epi32(_mm256_add_ps(p, _mm256_or_ps(_mm256_and_ps(p, sign), half)));
    }
    const uint16_t dh = fp32_to_fp16(d);
    std::memcpy(out, &dh, 2);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2), pack_i8(q[0], q[1], q[2], q[3]));
  }
}

// Q8_K: the first element of largest |x| sets iscale = -127 / max; q = round-half-even
// (nearbyint, as cvtps does in the default rounding mode); bsums per 16; d = 1 / iscale.
GENIEX_X86_TARGET void quantize_q8_k(const float* x, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t ib = 0; ib < n / quant::kQK_K; ++ib, x += quant::kQK_K, out += kQ8KBytes) {
    __m256 m = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int k = 0; k < 32; ++k) {
      const __m256 ax = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k));
      m = _mm256_max_ps(m, ax);
      bad = _mm256_or_ps(bad, not_finite(ax));
    }
    const float amax = hmax(m);
    if (_mm256_movemask_ps(bad) != 0 || amax == 0.0f) {
      quant::detail::quantize_q8_k(x, out, 1);
      continue;
    }
    const __m256 vmax = _mm256_set1_ps(amax);
    int idx = 0;
    for (int k = 0; k < 32; ++k) {
      const __m256 ax = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k));
      const int mask = _mm256_movemask_ps(_mm256_cmp_ps(ax, vmax, _CMP_EQ_OQ));
      if (mask != 0) {
        idx = 8 * k + __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
    }
    const float iscale = -127.0f / x[idx];
    if (!(std::fabs(iscale) <= std::numeric_limits<float>::max())) {
      quant::detail::quantize_q8_k(x, out, 1);
      continue;
    }
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    int16_t bsums[16];
    for (int g = 0; g < 8; ++g) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + 32 * g + 8 * k)));
      }
      const __m256i q8 = pack_i8(q[0], q[1], q[2], q[3]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kQ8KQs + 32 * g), q8);
      // Byte sums of q + 128 per 8 bytes, then per 16: Σ q = Σ (q + 128) - 16 * 128.
      __m256i s = _mm256_sad_epu8(_mm256_xor_si256(q8, bias), _mm256_setzero_si256());
      s = _mm256_add_epi64(s, _mm256_srli_si256(s, 8));
      bsums[2 * g] = static_cast<int16_t>(_mm256_extract_epi32(s, 0) - 2048);
      bsums[2 * g + 1] = static_cast<int16_t>(_mm256_extract_epi32(s, 4) - 2048);
    }
    const float d = 1.0f / iscale;
    std::memcpy(out, &d, 4);
    std::memcpy(out + kQ8KBsums, bsums, sizeof(bsums));
  }
}

#endif  // !GENIEX_X86_VNNI

GemmFn gemm_for_type(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return gemm_tiles<FloatKernel<LoadF32>>;
#if GENIEX_X86_VNNI
    case GgmlType::kF16: return gemm_f16;
#else
    case GgmlType::kF16: return gemm_tiles<FloatKernel<LoadF16>>;
#endif
    case GgmlType::kBF16: return gemm_tiles<FloatKernel<LoadBF16>>;
    case GgmlType::kQ4_0: return gemm_rows<LegacyKernel<UnpackQ4_0>>;
    case GgmlType::kQ4_1: return gemm_rows<LegacyKernel<UnpackQ4_1>>;
    case GgmlType::kQ5_0: return gemm_rows<LegacyKernel<UnpackQ5_0>>;
    case GgmlType::kQ5_1: return gemm_rows<LegacyKernel<UnpackQ5_1>>;
    case GgmlType::kQ8_0: return gemm_rows<LegacyKernel<UnpackQ8_0>>;
    case GgmlType::kIQ4_NL: return gemm_rows<LegacyKernel<UnpackIQ4NL>>;
    case GgmlType::kQ4_K: return gemm_tiles<Q45KKernel<false>>;
    case GgmlType::kQ5_K: return gemm_tiles<Q45KKernel<true>>;
    case GgmlType::kQ6_K: return gemm_tiles<Q6KKernel>;
    default: return nullptr;
  }
}

// The row-interleaved (repacked) kernels, built with the same helpers and target.
#include "backends/cpu/kernels/repack_x86-inl.h"  // NOLINT(build/include)
