// NEON gemm kernels, written once and instantiated twice by vec_dot_neon.cpp: for baseline
// Armv8-A NEON and for the dot-product extension. Before including, define GENIEX_NEON_TARGET
// (function attribute, possibly empty) and GENIEX_NEON_DOTPROD (0/1), inside a distinct
// namespace. Integer block dots are exact; only float accumulation order differs from the
// reference.
// NOLINT(build/header_guard): included once per target on purpose.

using quant::kQK;

GENIEX_NEON_TARGET inline int32x4_t idot(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if GENIEX_NEON_DOTPROD
  return vdotq_s32(acc, a, b);
#else
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

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

inline float f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }

GENIEX_NEON_TARGET inline int8x16_t s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

// 32 bits of qh -> two masks of 16 bytes (0xFF where the bit of element j is set).
GENIEX_NEON_TARGET inline void bits_to_masks(const uint8_t* qh, uint8x16_t* m0, uint8x16_t* m1) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  const uint8x16_t hq = vreinterpretq_u8_u32(vdupq_n_u32(h));
  static constexpr uint8_t kIdx0[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static constexpr uint8_t kIdx1[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bit = vld1q_u8(kBit);
  *m0 = vtstq_u8(vqtbl1q_u8(hq, vld1q_u8(kIdx0)), bit);
  *m1 = vtstq_u8(vqtbl1q_u8(hq, vld1q_u8(kIdx1)), bit);
}

// ---- 32-element blocks: unpack to two int8x16 (elements 0..15, 16..31) ------------------------

struct UnpackQ4_0 {
  static constexpr size_t kBytes = 18;
  static constexpr bool kMin = false;
  GENIEX_NEON_TARGET static void unpack(const uint8_t* b, int8x16_t* x0, int8x16_t* x1) {
    const uint8x16_t v = vld1q_u8(b + 2);
    const int8x16_t eight = vdupq_n_s8(8);
    *x0 = vsubq_s8(s8(vandq_u8(v, vdupq_n_u8(0x0F))), eight);
    *x1 = vsubq_s8(s8(vshrq_n_u8(v, 4)), eight);
  }
};

struct UnpackQ5_0 {
  static constexpr size_t kBytes = 22;
  static constexpr bool kMin = false;
  GENIEX_NEON_TARGET static void unpack(const uint8_t* b, int8x16_t* x0, int8x16_t* x1) {
    uint8x16_t m0, m1;
    bits_to_masks(b + 2, &m0, &m1);
    const uint8x16_t v = vld1q_u8(b + 6);
    const uint8x16_t f0 = vdupq_n_u8(0xF0);
    // (nibble | bit4) - 16 == nibble | (bit4 ? 0 : 0xF0) as int8.
    *x0 = s8(vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0F)), vbicq_u8(f0, m0)));
    *x1 = s8(vorrq_u8(vshrq_n_u8(v, 4), vbicq_u8(f0, m1)));
  }
};

struct UnpackQ8_0 {
  static constexpr size_t kBytes = 34;
  static constexpr bool kMin = false;
  GENIEX_NEON_TARGET static void unpack(const uint8_t* b, int8x16_t* x0, int8x16_t* x1) {
    *x0 = vld1q_s8(reinterpret_cast<const int8_t*>(b + 2));
    *x1 = vld1q_s8(reinterpret_cast<const int8_t*>(b + 18));
  }
};

struct UnpackIQ4NL {
  static constexpr size_t kBytes = 18;
  static constexpr bool kMin = false;
  GENIEX_NEON_TARGET static void unpack(const uint8_t* b, int8x16_t* x0, int8x16_t* x1) {
    const int8x16_t values = vld1q_s8(quant::kValuesIQ4NL);
    const uint8x16_t v = vld1q_u8(b + 2);
    *x0 = vqtbl1q_s8(values, vandq_u8(v, vdupq_n_u8(0x0F)));
    *x1 = vqtbl1q_s8(values, vshrq_n_u8(v, 4));
  }
};

struct UnpackQ4_1 {
  static constexpr size_t kBytes = 20;
  static constexpr bool kMin = true;
  GENIEX_NEON_TARGET static void unpack(const uint8_t* b, int8x16_t* x0, int8x16_t* x1) {
    const uint8x16_t v = vld1q_u8(b + 4);
    *x0 = s8(vandq_u8(v, vdupq_n_u8(0x0F)));
    *x1 = s8(vshrq_n_u8(v, 4));
  }
};

struct UnpackQ5_1 {
  static constexpr size_t kBytes = 24;
  static constexpr bool kMin = true;
  GENIEX_NEON_TARGET static void unpack(const uint8_t* b, int8x16_t* x0, int8x16_t* x1) {
    uint8x16_t m0, m1;
    bits_to_masks(b + 4, &m0, &m1);
    const uint8x16_t v = vld1q_u8(b + 8);
    const uint8x16_t h = vdupq_n_u8(0x10);
    *x0 = s8(vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0F)), vandq_u8(h, m0)));
    *x1 = s8(vorrq_u8(vshrq_n_u8(v, 4), vandq_u8(h, m1)));
  }
};

// Weight blocks of U with Q8_0 activations (kMin: Q8_1 activations, plus m * s).
template <typename U>
struct LegacyKernel {
  static constexpr int kBlock = kQK;
  static constexpr size_t kBlockBytes = U::kBytes;
  static constexpr size_t kActBytes = U::kMin ? 36 : 34;
  static constexpr size_t kActQs = U::kMin ? 4 : 2;

  template <int NC>
  GENIEX_NEON_TARGET static void run(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                     float* res) {
    float32x4_t acc[NC];
    float summ[NC];
    for (int c = 0; c < NC; ++c) {
      acc[c] = vdupq_n_f32(0.0f);
      summ[c] = 0.0f;
    }
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * U::kBytes;
      int8x16_t x0, x1;
      U::unpack(x, &x0, &x1);
      const float dx = f16(x);
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kActBytes;
        const int8_t* yq = reinterpret_cast<const int8_t*>(y + kActQs);
        const int32x4_t p = idot(idot(vdupq_n_s32(0), x0, vld1q_s8(yq)), x1, vld1q_s8(yq + 16));
        acc[c] = vfmaq_f32(acc[c], vcvtq_f32_s32(p), vdupq_n_f32(dx * f16(y)));
        if constexpr (U::kMin) summ[c] += f16(x + 2) * f16(y + 2);
      }
    }
    for (int c = 0; c < NC; ++c) res[c] = vaddvq_f32(acc[c]) + summ[c];
  }
};

// ---- K-quants (Q8_K activations: f32 d @0, qs @4, int16 bsums[16] @260) ----------------------

constexpr size_t kQ8KBytes = 292, kQ8KQs = 4, kQ8KBsums = 260;

// 12 packed bytes of Q4_K/Q5_K 6-bit scales and mins -> sc[8], mn[8].
inline void unpack_k4_scales(const uint8_t* s, uint8_t* sc, uint8_t* mn) {
  for (int j = 0; j < 8; ++j) quant::get_scale_min_k4(j, s, &sc[j], &mn[j]);
}

template <bool kHigh>
struct Q45KKernel {
  static constexpr int kBlock = quant::kQK_K;
  static constexpr size_t kBlockBytes = kHigh ? 176 : 144;
  static constexpr size_t kQs = kHigh ? 48 : 16;

  template <int NC>
  GENIEX_NEON_TARGET static void run(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                     float* res) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    float sum[NC];
    for (int c = 0; c < NC; ++c) sum[c] = 0.0f;
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * kBlockBytes;
      const float d = f16(x), dmin = f16(x + 2);
      uint8_t sc[8], mn[8];
      unpack_k4_scales(x + 4, sc, mn);
      uint8x16_t qh0 = vdupq_n_u8(0), qh1 = vdupq_n_u8(0);
      if constexpr (kHigh) {
        qh0 = vld1q_u8(x + 16);
        qh1 = vld1q_u8(x + 32);
      }
      int32x4_t isum[NC];
      for (int c = 0; c < NC; ++c) isum[c] = vdupq_n_s32(0);
      for (int j = 0; j < 4; ++j) {
        const uint8x16_t b0 = vld1q_u8(x + kQs + 32 * j);
        const uint8x16_t b1 = vld1q_u8(x + kQs + 32 * j + 16);
        uint8x16_t l0 = vandq_u8(b0, m4), l1 = vandq_u8(b1, m4);
        uint8x16_t h0 = vshrq_n_u8(b0, 4), h1 = vshrq_n_u8(b1, 4);
        if constexpr (kHigh) {
          const uint8x16_t bit = vdupq_n_u8(0x10);
          l0 = vorrq_u8(l0, vandq_u8(vshlq_n_u8(qh0, 4), bit));
          l1 = vorrq_u8(l1, vandq_u8(vshlq_n_u8(qh1, 4), bit));
          h0 = vorrq_u8(h0, vandq_u8(vshlq_n_u8(qh0, 3), bit));
          h1 = vorrq_u8(h1, vandq_u8(vshlq_n_u8(qh1, 3), bit));
          qh0 = vshrq_n_u8(qh0, 2);
          qh1 = vshrq_n_u8(qh1, 2);
        }
        for (int c = 0; c < NC; ++c) {
          const int8_t* y =
              reinterpret_cast<const int8_t*>(a[c] + ib * kQ8KBytes + kQ8KQs + 64 * j);
          const int32x4_t zero = vdupq_n_s32(0);
          const int32x4_t pl = idot(idot(zero, s8(l0), vld1q_s8(y)), s8(l1), vld1q_s8(y + 16));
          const int32x4_t ph = idot(idot(zero, s8(h0), vld1q_s8(y + 32)), s8(h1), vld1q_s8(y + 48));
          isum[c] = vmlaq_n_s32(isum[c], pl, sc[2 * j]);
          isum[c] = vmlaq_n_s32(isum[c], ph, sc[2 * j + 1]);
        }
      }
      const int16x8_t mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kQ8KBytes;
        const int16_t* bs = reinterpret_cast<const int16_t*>(y + kQ8KBsums);
        const int16x8_t q8s = vpaddq_s16(vld1q_s16(bs), vld1q_s16(bs + 8));
        const int32x4_t pm =
            vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(q8s)), mins, q8s);
        const float dy = load_f32(y);
        sum[c] += d * dy * static_cast<float>(vaddvq_s32(isum[c])) -
                  dmin * dy * static_cast<float>(vaddvq_s32(pm));
      }
    }
    for (int c = 0; c < NC; ++c) res[c] = sum[c];
  }
};

// Q6_K: ql[128] @0, qh[64] @128, int8 scales[16] @192, f16 d @208; the -32 offset is applied
// once per block through the activation bsums.
struct Q6KKernel {
  static constexpr int kBlock = quant::kQK_K;
  static constexpr size_t kBlockBytes = 210;

  template <int NC>
  GENIEX_NEON_TARGET static void run(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                     float* res) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(0x03);
    float sum[NC];
    for (int c = 0; c < NC; ++c) sum[c] = 0.0f;
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * kBlockBytes;
      const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
      int32x4_t isum[NC];
      for (int c = 0; c < NC; ++c) isum[c] = vdupq_n_s32(0);
      for (int j = 0; j < 2; ++j) {
        for (int half = 0; half < 2; ++half) {  // l in [16 half, 16 half + 16)
          const uint8x16_t ql0 = vld1q_u8(x + 64 * j + 16 * half);
          const uint8x16_t ql1 = vld1q_u8(x + 64 * j + 32 + 16 * half);
          const uint8x16_t qh = vld1q_u8(x + 128 + 32 * j + 16 * half);
          int8x16_t q[4];
          q[0] = s8(vorrq_u8(vandq_u8(ql0, m4), vshlq_n_u8(vandq_u8(qh, m3), 4)));
          q[1] = s8(vorrq_u8(vandq_u8(ql1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), m3), 4)));
          q[2] = s8(vorrq_u8(vshrq_n_u8(ql0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), m3), 4)));
          q[3] = s8(vorrq_u8(vshrq_n_u8(ql1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4)));
          for (int e = 0; e < 4; ++e) {
            const int off = 128 * j + 32 * e + 16 * half;  // element offset in the block
            const int32_t s = sc[off / 16];
            for (int c = 0; c < NC; ++c) {
              const int8_t* y = reinterpret_cast<const int8_t*>(a[c] + ib * kQ8KBytes + kQ8KQs);
              isum[c] = vmlaq_n_s32(isum[c], idot(vdupq_n_s32(0), q[e], vld1q_s8(y + off)), s);
            }
          }
        }
      }
      const int16x8_t sc0 = vmovl_s8(vld1_s8(sc)), sc1 = vmovl_s8(vld1_s8(sc + 8));
      const float d = f16(x + 208);
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kQ8KBytes;
        const int16_t* bs = reinterpret_cast<const int16_t*>(y + kQ8KBsums);
        const int16x8_t b0 = vld1q_s16(bs), b1 = vld1q_s16(bs + 8);
        int32x4_t corr = vmull_s16(vget_low_s16(sc0), vget_low_s16(b0));
        corr = vmlal_high_s16(corr, sc0, b0);
        corr = vmlal_s16(corr, vget_low_s16(sc1), vget_low_s16(b1));
        corr = vmlal_high_s16(corr, sc1, b1);
        const int32_t total = vaddvq_s32(isum[c]) - 32 * vaddvq_s32(corr);
        sum[c] += d * load_f32(y) * static_cast<float>(total);
      }
    }
    for (int c = 0; c < NC; ++c) res[c] = sum[c];
  }
};

// ---- float types --------------------------------------------------------------------------------

struct LoadF32 {
  static constexpr size_t kBytes = 4;
  GENIEX_NEON_TARGET static float32x4_t load4(const uint8_t* p) {
    return vld1q_f32(reinterpret_cast<const float*>(p));
  }
  static float load1(const uint8_t* p) { return load_f32(p); }
};

struct LoadF16 {
  static constexpr size_t kBytes = 2;
  GENIEX_NEON_TARGET static float32x4_t load4(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
  static float load1(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
};

struct LoadBF16 {
  static constexpr size_t kBytes = 2;
  GENIEX_NEON_TARGET static float32x4_t load4(const uint8_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
  }
  static float load1(const uint8_t* p) { return bf16_to_fp32(load_u16(p)); }
};

template <typename L>
struct FloatKernel {
  static constexpr int kBlock = 1;
  static constexpr size_t kBlockBytes = L::kBytes;

  template <int NC>
  GENIEX_NEON_TARGET static void run(size_t n, const uint8_t* w, const uint8_t* const* a,
                                     float* res) {
    constexpr size_t kB = L::kBytes;
    float32x4_t acc0[NC], acc1[NC];
    for (int c = 0; c < NC; ++c) {
      acc0[c] = vdupq_n_f32(0.0f);
      acc1[c] = vdupq_n_f32(0.0f);
    }
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
      const float32x4_t w0 = L::load4(w + k * kB), w1 = L::load4(w + (k + 4) * kB);
      for (int c = 0; c < NC; ++c) {
        acc0[c] = vfmaq_f32(acc0[c], w0, L::load4(a[c] + k * kB));
        acc1[c] = vfmaq_f32(acc1[c], w1, L::load4(a[c] + (k + 4) * kB));
      }
    }
    for (int c = 0; c < NC; ++c) {
      float s = vaddvq_f32(vaddq_f32(acc0[c], acc1[c]));
      for (size_t t = k; t < n; ++t) s += L::load1(w + t * kB) * L::load1(a[c] + t * kB);
      res[c] = s;
    }
  }
};

GemmFn gemm_for_type(GgmlType t) {
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
