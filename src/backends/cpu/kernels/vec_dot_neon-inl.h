// NEON gemm kernels, written once and instantiated three times by vec_dot_neon.cpp: for baseline
// Armv8-A NEON, the dot-product extension, and dotprod + i8mm (vmmlaq_s32 tiles for the 32-element
// block types when nc >= 2). Before including, define GENIEX_NEON_TARGET (function attribute,
// possibly empty), GENIEX_NEON_DOTPROD and GENIEX_NEON_I8MM (0/1), inside a distinct namespace.
// Integer block dots are exact; only float accumulation order differs from the reference.
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

// f16 values at p + r * stride (r < NR) -> float lanes 0..NR-1 (the others 0), converted in one
// instruction (fp16_to_fp32 is a bit-twiddling function on the scalar side).
template <int NR>
GENIEX_NEON_TARGET inline float32x4_t f16_rows(const uint8_t* p, size_t stride) {
  uint16x4_t h = vdup_n_u16(0);
  h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(p), h, 0);
  if constexpr (NR > 1) h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(p + stride), h, 1);
  if constexpr (NR > 2) h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(p + 2 * stride), h, 2);
  if constexpr (NR > 3) h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(p + 3 * stride), h, 3);
  return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

#if GENIEX_NEON_I8MM
// 64-bit halves: {a[0..7], b[0..7]} and {a[8..15], b[8..15]} (vmmlaq_s32 operand layout).
GENIEX_NEON_TARGET inline int8x16_t zip_lo(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
GENIEX_NEON_TARGET inline int8x16_t zip_hi(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
#endif

// [Σ p0, Σ p1, Σ p2, Σ p3].
GENIEX_NEON_TARGET inline int32x4_t fold4(int32x4_t p0, int32x4_t p1, int32x4_t p2, int32x4_t p3) {
  return vpaddq_s32(vpaddq_s32(p0, p1), vpaddq_s32(p2, p3));
}

// Weight blocks of U with Q8_0 activations (kMin: Q8_1 activations, plus m * s). nc = 1
// (run_gemv): 4 consecutive blocks of one row per step; otherwise NR <= 4 weight rows x NC
// activation rows per pass. Either way the 4 block dots are folded into one int32x4 (one lane
// per block or row), so the scales of 4 blocks/rows are converted, multiplied and applied with
// one vector op each.
template <typename U>
struct LegacyKernel {
  static constexpr int kBlock = kQK;
  static constexpr size_t kBlockBytes = U::kBytes;
  static constexpr size_t kActBytes = U::kMin ? 36 : 34;
  static constexpr size_t kActQs = U::kMin ? 4 : 2;
  static constexpr bool kActSums = false;  // sdot / smull take signed weights directly

  static void act_sums(size_t, const uint8_t*, int32_t*) {}

  GENIEX_NEON_TARGET static int32x4_t block_dot(int8x16_t x0, int8x16_t x1, const uint8_t* y) {
    const int8_t* yq = reinterpret_cast<const int8_t*>(y + kActQs);
    return idot(idot(vdupq_n_s32(0), x0, vld1q_s8(yq)), x1, vld1q_s8(yq + 16));
  }

  GENIEX_NEON_TARGET static float run_gemv(size_t nb, const uint8_t* x, const uint8_t* y,
                                           const int32_t* /*sums*/) {
    float32x4_t acc = vdupq_n_f32(0.0f), accm = vdupq_n_f32(0.0f);
    size_t ib = 0;
    for (; ib + 4 <= nb; ib += 4, x += 4 * U::kBytes, y += 4 * kActBytes) {
      int32x4_t p[4];
      for (int k = 0; k < 4; ++k) {
        int8x16_t x0, x1;
        U::unpack(x + k * U::kBytes, &x0, &x1);
        p[k] = block_dot(x0, x1, y + k * kActBytes);
      }
      const float32x4_t s = vmulq_f32(f16_rows<4>(x, U::kBytes), f16_rows<4>(y, kActBytes));
      acc = vfmaq_f32(acc, vcvtq_f32_s32(fold4(p[0], p[1], p[2], p[3])), s);
      if constexpr (U::kMin) {
        accm = vfmaq_f32(accm, f16_rows<4>(x + 2, U::kBytes), f16_rows<4>(y + 2, kActBytes));
      }
    }
    float sum = vaddvq_f32(acc) + vaddvq_f32(accm);
    for (; ib < nb; ++ib, x += U::kBytes, y += kActBytes) {
      int8x16_t x0, x1;
      U::unpack(x, &x0, &x1);
      sum += f16(x) * f16(y) * static_cast<float>(vaddvq_s32(block_dot(x0, x1, y)));
      if constexpr (U::kMin) sum += f16(x + 2) * f16(y + 2);
    }
    return sum;
  }

#if GENIEX_NEON_I8MM
  // i8mm: 2 weight rows x 2 activation rows per vmmlaq_s32 (8-element K slices; 4 per block).
  // Rows/columns are zipped in 64-bit halves: {ra[0..7], rb[0..7]} etc. The 2x2 result
  // [ra.ca, ra.cb, rb.ca, rb.cb] is scaled by the matching outer product of the scales.
  template <int NR, int NC>
  GENIEX_NEON_TARGET static void run(size_t nb, const uint8_t* w, size_t ws,
                                     const uint8_t* const* a, float* res) {
    constexpr int TR = (NR + 1) / 2, TC = (NC + 1) / 2;
    float32x4_t acc[TR][TC];
    for (int tr = 0; tr < TR; ++tr) {
      for (int tc = 0; tc < TC; ++tc) acc[tr][tc] = vdupq_n_f32(0.0f);
    }
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * U::kBytes;
      int8x16_t wq[TR][4];
      for (int tr = 0; tr < TR; ++tr) {
        int8x16_t a0, a1, b0 = vdupq_n_s8(0), b1 = vdupq_n_s8(0);
        U::unpack(x + 2 * tr * ws, &a0, &a1);
        if (2 * tr + 1 < NR) U::unpack(x + (2 * tr + 1) * ws, &b0, &b1);
        wq[tr][0] = zip_lo(a0, b0);
        wq[tr][1] = zip_hi(a0, b0);
        wq[tr][2] = zip_lo(a1, b1);
        wq[tr][3] = zip_hi(a1, b1);
      }
      const float32x4_t dw = f16_rows<NR>(x, ws);
      float32x4_t mw = vdupq_n_f32(0.0f), sa = vdupq_n_f32(0.0f);
      if constexpr (U::kMin) mw = f16_rows<NR>(x + 2, ws);
      uint16_t dah[4] = {}, sah[4] = {};
      const int8_t* yq[2 * TC];
      for (int c = 0; c < 2 * TC; ++c) {
        const uint8_t* y = a[c < NC ? c : 0] + ib * kActBytes;
        yq[c] = reinterpret_cast<const int8_t*>(y + kActQs);
        if (c < NC) {
          dah[c] = load_u16(y);
          if constexpr (U::kMin) sah[c] = load_u16(y + 2);
        }
      }
      const float32x4_t da = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(dah)));
      if constexpr (U::kMin) sa = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(sah)));
      for (int tc = 0; tc < TC; ++tc) {
        const int8x16_t c0 = vld1q_s8(yq[2 * tc]), c1 = vld1q_s8(yq[2 * tc] + 16);
        int8x16_t d0 = vdupq_n_s8(0), d1 = vdupq_n_s8(0);
        if (2 * tc + 1 < NC) {
          d0 = vld1q_s8(yq[2 * tc + 1]);
          d1 = vld1q_s8(yq[2 * tc + 1] + 16);
        }
        const int8x16_t yb[4] = {zip_lo(c0, d0), zip_hi(c0, d0), zip_lo(c1, d1), zip_hi(c1, d1)};
        const float32x2_t da2 = tc == 0 ? vget_low_f32(da) : vget_high_f32(da);
        const float32x4_t dac = vcombine_f32(da2, da2);  // [ca, cb, ca, cb]
        for (int tr = 0; tr < TR; ++tr) {
          int32x4_t p = vmmlaq_s32(vdupq_n_s32(0), wq[tr][0], yb[0]);
          p = vmmlaq_s32(p, wq[tr][1], yb[1]);
          p = vmmlaq_s32(p, wq[tr][2], yb[2]);
          p = vmmlaq_s32(p, wq[tr][3], yb[3]);
          const float32x4_t dwr = tr == 0 ? vzip1q_f32(dw, dw) : vzip2q_f32(dw, dw);
          acc[tr][tc] = vfmaq_f32(acc[tr][tc], vcvtq_f32_s32(p), vmulq_f32(dwr, dac));
          if constexpr (U::kMin) {
            const float32x4_t mwr = tr == 0 ? vzip1q_f32(mw, mw) : vzip2q_f32(mw, mw);
            const float32x2_t sa2 = tc == 0 ? vget_low_f32(sa) : vget_high_f32(sa);
            acc[tr][tc] = vfmaq_f32(acc[tr][tc], mwr, vcombine_f32(sa2, sa2));
          }
        }
      }
    }
    for (int tr = 0; tr < TR; ++tr) {
      for (int tc = 0; tc < TC; ++tc) {
        float t[4];
        vst1q_f32(t, acc[tr][tc]);
        for (int k = 0; k < 4; ++k) {
          const int r = 2 * tr + k / 2, c = 2 * tc + k % 2;
          if (r < NR && c < NC) res[c * kMaxTileRows + r] = t[k];
        }
      }
    }
  }
#else
  // res[c * kMaxTileRows + r] = dot(weight row r at w + r * ws, activation row c).
  template <int NR, int NC>
  GENIEX_NEON_TARGET static void run(size_t nb, const uint8_t* w, size_t ws,
                                     const uint8_t* const* a, float* res) {
    float32x4_t acc[NC], accm[NC];
    for (int c = 0; c < NC; ++c) {
      acc[c] = vdupq_n_f32(0.0f);
      accm[c] = vdupq_n_f32(0.0f);
    }
    for (size_t ib = 0; ib < nb; ++ib) {
      const uint8_t* x = w + ib * U::kBytes;
      int8x16_t x0[NR], x1[NR];
      for (int r = 0; r < NR; ++r) U::unpack(x + r * ws, &x0[r], &x1[r]);
      const float32x4_t dw = f16_rows<NR>(x, ws);
      float32x4_t mw = vdupq_n_f32(0.0f);
      if constexpr (U::kMin) mw = f16_rows<NR>(x + 2, ws);
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * kActBytes;
        int32x4_t p[4];
        for (int r = 0; r < 4; ++r) p[r] = r < NR ? block_dot(x0[r], x1[r], y) : vdupq_n_s32(0);
        const float32x4_t s = vmulq_n_f32(dw, f16(y));
        acc[c] = vfmaq_f32(acc[c], vcvtq_f32_s32(fold4(p[0], p[1], p[2], p[3])), s);
        if constexpr (U::kMin) accm[c] = vfmaq_n_f32(accm[c], mw, f16(y + 2));
      }
    }
    for (int c = 0; c < NC; ++c) {
      float tmp[4];
      vst1q_f32(tmp, vaddq_f32(acc[c], accm[c]));
      for (int r = 0; r < NR; ++r) res[c * kMaxTileRows + r] = tmp[r];
    }
  }
#endif
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

// ---- activation quantization (bit-identical to quant::quantize_row) ---------------------------
#if !GENIEX_NEON_DOTPROD && !GENIEX_NEON_I8MM

// Q8_0: d = amax / 127, q = round-half-away(x * (1 / d)) (vcvtaq). Blocks with a NaN/Inf or a
// 1/d that overflows (where the reference wraps) go to the reference itself.
GENIEX_NEON_TARGET void quantize_q8_0(const float* x, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  constexpr float kMax = std::numeric_limits<float>::max();
  for (int64_t ib = 0; ib < n / kQK; ++ib, x += kQK, out += 34) {
    float32x4_t v[8];
    float32x4_t m = vdupq_n_f32(0.0f);
    uint32x4_t bad = vdupq_n_u32(0);
    for (int k = 0; k < 8; ++k) {
      v[k] = vld1q_f32(x + 4 * k);
      const float32x4_t ax = vabsq_f32(v[k]);
      m = vmaxq_f32(m, ax);
      bad = vorrq_u32(bad, vmvnq_u32(vcleq_f32(ax, vdupq_n_f32(kMax))));  // NaN or Inf
    }
    const float d = vmaxvq_f32(m) / 127.0f;
    const float id = d == 0.0f ? 0.0f : 1.0f / d;
    if (vmaxvq_u32(bad) != 0 || !(id <= kMax)) {
      quant::detail::quantize_q8_0(x, out, 1);
      continue;
    }
    int16x8_t h[4];
    for (int k = 0; k < 4; ++k) {
      h[k] = vcombine_s16(vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[2 * k], id))),
                          vqmovn_s32(vcvtaq_s32_f32(vmulq_n_f32(v[2 * k + 1], id))));
    }
    const uint16_t dh = fp32_to_fp16(d);
    std::memcpy(out, &dh, 2);
    vst1q_s8(reinterpret_cast<int8_t*>(out + 2), vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
    vst1q_s8(reinterpret_cast<int8_t*>(out + 18), vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
  }
}

// Q8_K: the first element of largest |x| sets iscale = -127 / max; q = round-half-even
// (vcvtnq, as nearbyint in the default rounding mode); bsums per 16; d = 1 / iscale.
GENIEX_NEON_TARGET void quantize_q8_k(const float* x, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  constexpr float kMax = std::numeric_limits<float>::max();
  for (int64_t ib = 0; ib < n / quant::kQK_K; ++ib, x += quant::kQK_K, out += kQ8KBytes) {
    float32x4_t m = vdupq_n_f32(0.0f);
    uint32x4_t bad = vdupq_n_u32(0);
    for (int k = 0; k < 64; ++k) {
      const float32x4_t ax = vabsq_f32(vld1q_f32(x + 4 * k));
      m = vmaxq_f32(m, ax);
      bad = vorrq_u32(bad, vmvnq_u32(vcleq_f32(ax, vdupq_n_f32(kMax))));
    }
    const float amax = vmaxvq_f32(m);
    if (vmaxvq_u32(bad) != 0 || amax == 0.0f) {
      quant::detail::quantize_q8_k(x, out, 1);
      continue;
    }
    int idx = 0;
    while (std::fabs(x[idx]) != amax) ++idx;
    const float iscale = -127.0f / x[idx];
    if (!(std::fabs(iscale) <= kMax)) {
      quant::detail::quantize_q8_k(x, out, 1);
      continue;
    }
    int16_t bsums[16];
    for (int g = 0; g < 16; ++g) {
      const float* xg = x + 16 * g;
      int16x8_t h[2];
      for (int k = 0; k < 2; ++k) {
        h[k] = vcombine_s16(
            vqmovn_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xg + 8 * k), iscale))),
            vqmovn_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xg + 8 * k + 4), iscale))));
      }
      bsums[g] = static_cast<int16_t>(vaddvq_s16(vaddq_s16(h[0], h[1])));
      vst1q_s8(reinterpret_cast<int8_t*>(out + kQ8KQs + 16 * g),
               vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
    }
    const float d = 1.0f / iscale;
    std::memcpy(out, &d, 4);
    std::memcpy(out + kQ8KBsums, bsums, sizeof(bsums));
  }
}

#endif  // !GENIEX_NEON_DOTPROD

// The row-interleaved (repacked) kernels, built with the same helpers and target.
#include "backends/cpu/kernels/repack_neon-inl.h"  // NOLINT(build/include)
