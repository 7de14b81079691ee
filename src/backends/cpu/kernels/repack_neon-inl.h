// NEON packed (row-interleaved) kernels, included after vec_dot_neon-inl.h by vec_dot_neon.cpp
// for baseline NEON and for dotprod (the i8mm level uses the dotprod kernel). Q4_0x8 (repack.h):
// 16 bytes of a chunk hold 4 elements of each of 4 rows, so sdot by lane (baseline: vmull +
// pairwise adds) with the 4 matching activation bytes leaves row r's partial dot in lane r.
// NOLINT(build/header_guard): included once per target on purpose.

#define GENIEX_PACKED_TARGET GENIEX_NEON_TARGET
#include "backends/cpu/kernels/packed_tiles-inl.h"  // NOLINT(build/include)
#undef GENIEX_PACKED_TARGET

inline constexpr int kPackedCols = 4;

// acc[r] += Σ_e w[4r + e] * a[4 * L + e] (lane L of a as 4 int8).
template <int L>
GENIEX_NEON_TARGET inline int32x4_t dot4_lane(int32x4_t acc, int8x16_t w, int8x16_t a) {
#if GENIEX_NEON_DOTPROD
  return vdotq_laneq_s32(acc, w, a, L);
#else
  const int8x16_t b = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
  const int16x8_t p = vpaddq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(b)), vmull_high_s8(w, b));
  return vpadalq_s16(acc, p);
#endif
}

template <int NC>
GENIEX_NEON_TARGET inline void q4_0x8_tile(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                           float* out, size_t out_stride, int rows) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  float32x4_t acc[NC][2];
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = vdupq_n_f32(0.0f);
  const size_t ds_off = nb * detail::kQ8x4Qs;
  for (size_t ib = 0; ib < nb; ++ib) {
    const uint8_t* x = w + ib * detail::kQ4_0x8Block;
    float dwf[8];
    for (int r = 0; r < 8; ++r) dwf[r] = f16(x + 2 * r);
    const float32x4_t dw0 = vld1q_f32(dwf), dw1 = vld1q_f32(dwf + 4);
    int8x16_t lo[4][2], hi[4][2];  // [chunk][rows 0-3 / 4-7]
    for (int m = 0; m < 4; ++m) {
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t bits = vld1q_u8(x + 16 + 32 * m + 16 * h);
        lo[m][h] = vreinterpretq_s8_u8(vandq_u8(bits, m4));
        hi[m][h] = vreinterpretq_s8_u8(vshrq_n_u8(bits, 4));
      }
    }
    for (int c = 0; c < NC; ++c) {
      const uint8_t* y = a[c] + ib * detail::kQ8x4Qs;
      const uint8_t* ds = a[c] + ds_off + ib * detail::kQ8x4Ds;
      const int8x16_t a0 = vld1q_s8(reinterpret_cast<const int8_t*>(y));
      const int8x16_t a1 = vld1q_s8(reinterpret_cast<const int8_t*>(y + 16));
      const int32x4_t corr = vdupq_n_s32(detail::load_i32(ds + 4));
      const float32x4_t da = vdupq_n_f32(load_f32(ds));
      for (int h = 0; h < 2; ++h) {
        int32x4_t s = corr;
        s = dot4_lane<0>(s, lo[0][h], a0);
        s = dot4_lane<1>(s, lo[1][h], a0);
        s = dot4_lane<2>(s, lo[2][h], a0);
        s = dot4_lane<3>(s, lo[3][h], a0);
        s = dot4_lane<0>(s, hi[0][h], a1);
        s = dot4_lane<1>(s, hi[1][h], a1);
        s = dot4_lane<2>(s, hi[2][h], a1);
        s = dot4_lane<3>(s, hi[3][h], a1);
        acc[c][h] = vfmaq_f32(acc[c][h], vmulq_f32(h == 0 ? dw0 : dw1, da), vcvtq_f32_s32(s));
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    float tmp[8];
    vst1q_f32(tmp, acc[c][0]);
    vst1q_f32(tmp + 4, acc[c][1]);
    float* o = out + static_cast<size_t>(c) * out_stride;
    for (int r = 0; r < rows; ++r) o[r] = tmp[r];
  }
}

GENIEX_NEON_TARGET void q4_0x8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                                    size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * detail::kQ4_0x8Block;
  packed_gemm_tiles<PackedTiling{.chunk_bytes = 32u << 10, .max_cols = kPackedCols}>(
      kPackedCols, gb, w, nr, a, a_stride, nc, out, out_stride,
      [&]<int NC>(const uint8_t* wg, const uint8_t* const* rows, float* o, int nrows,
                  const uint8_t* /*pf*/)
          GENIEX_NEON_TARGET { q4_0x8_tile<NC>(nb, wg, rows, o, out_stride, nrows); });
}

// Σ over the 8 chunks w[0..7] (4 rows x 4 bytes each) of 4-byte dots with activation bytes
// a0 (chunks 0..3) and a1 (chunks 4..7).
GENIEX_NEON_TARGET inline int32x4_t dot8_chunks(int32x4_t s, const int8x16_t* w, int8x16_t a0,
                                                int8x16_t a1) {
  s = dot4_lane<0>(s, w[0], a0);
  s = dot4_lane<1>(s, w[1], a0);
  s = dot4_lane<2>(s, w[2], a0);
  s = dot4_lane<3>(s, w[3], a0);
  s = dot4_lane<0>(s, w[4], a1);
  s = dot4_lane<1>(s, w[5], a1);
  s = dot4_lane<2>(s, w[6], a1);
  return dot4_lane<3>(s, w[7], a1);
}

// 4 bytes -> int32x4.
GENIEX_NEON_TARGET inline int32x4_t widen4(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  const uint16x8_t h = vmovl_u8(vcreate_u8(v));
  return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(h)));
}

// Q4_Kx8, one activation row at a time (the NEON path is kept simple: correctness under qemu,
// plain multi-row reuse on hardware). Bit-identical to the NEON row kernel (Q45KKernel in
// vec_dot_neon-inl.h): the same exact integer sums per super-block and its float expression.
GENIEX_NEON_TARGET void q4_kx8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                                    size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * detail::kQ4_Kx8Block;
  const size_t ds_off = nsb * detail::kQ8KxQs;
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  for (int64_t g = 0; g * kPackRows < nr; ++g) {
    const int rows = static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows));
    const uint8_t* wg = w + static_cast<size_t>(g) * gb;
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* yc = a + static_cast<size_t>(c) * a_stride;
      float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
      for (size_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* x = wg + sb * detail::kQ4_Kx8Block;
        const uint8_t* y = yc + sb * detail::kQ8KxQs;
        const uint8_t* ds = yc + ds_off + sb * detail::kQ8KxDs;
        int16_t ssum[8];
        std::memcpy(ssum, ds + 4, 16);
        const float da = load_f32(ds);
        for (int h = 0; h < 2; ++h) {
          int32x4_t isum = vdupq_n_s32(0);
          for (int j = 0; j < 4; ++j) {
            int8x16_t lo[8], hi[8];
            for (int t = 0; t < 8; ++t) {
              const uint8x16_t bits = vld1q_u8(x + detail::kQ4_Kx8Qs + 32 * (8 * j + t) + 16 * h);
              lo[t] = vreinterpretq_s8_u8(vandq_u8(bits, m4));
              hi[t] = vreinterpretq_s8_u8(vshrq_n_u8(bits, 4));
            }
            const auto* yj = reinterpret_cast<const int8_t*>(y + 64 * j);
            const int32x4_t sl = dot8_chunks(vdupq_n_s32(0), lo, vld1q_s8(yj), vld1q_s8(yj + 16));
            const int32x4_t sh =
                dot8_chunks(vdupq_n_s32(0), hi, vld1q_s8(yj + 32), vld1q_s8(yj + 48));
            isum = vmlaq_s32(isum, sl, widen4(x + detail::kQ4_Kx8Scales + 16 * j + 4 * h));
            isum = vmlaq_s32(isum, sh, widen4(x + detail::kQ4_Kx8Scales + 16 * j + 8 + 4 * h));
          }
          int32_t ms[4];
          for (int r = 0; r < 4; ++r) {
            int32_t m = 0;
            for (int sub = 0; sub < 8; ++sub) {
              m += x[detail::kQ4_Kx8Mins + 16 * (sub / 2) + 2 * (4 * h + r) + sub % 2] * ssum[sub];
            }
            ms[r] = m;
          }
          float dwf[4], dmf[4];
          for (int r = 0; r < 4; ++r) {
            dwf[r] = f16(x + 2 * (4 * h + r)) * da;
            dmf[r] = f16(x + 16 + 2 * (4 * h + r)) * da;
          }
          // The row kernel's expression, rounding for rounding: sum += d * dy * Σ - dmin * dy *
          // Σmin (no fused steps), so the packed results are its bits.
          acc[h] =
              vaddq_f32(acc[h], vsubq_f32(vmulq_f32(vld1q_f32(dwf), vcvtq_f32_s32(isum)),
                                          vmulq_f32(vld1q_f32(dmf), vcvtq_f32_s32(vld1q_s32(ms)))));
        }
      }
      float tmp[8];
      vst1q_f32(tmp, acc[0]);
      vst1q_f32(tmp + 4, acc[1]);
      float* o = out + static_cast<size_t>(c) * out_stride + static_cast<size_t>(g) * kPackRows;
      for (int r = 0; r < rows; ++r) o[r] = tmp[r];
    }
  }
}

// Q6_Kx8, one activation row at a time (see q4_kx8_gemm).
GENIEX_NEON_TARGET void q6_kx8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                                    size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * detail::kQ6_Kx8Block;
  const size_t ds_off = nsb * detail::kQ8KxQs;
  const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(0x03);
  for (int64_t g = 0; g * kPackRows < nr; ++g) {
    const int rows = static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows));
    const uint8_t* wg = w + static_cast<size_t>(g) * gb;
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* yc = a + static_cast<size_t>(c) * a_stride;
      float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
      for (size_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* x = wg + sb * detail::kQ6_Kx8Block;
        const uint8_t* y = yc + sb * detail::kQ8KxQs;
        const uint8_t* ds = yc + ds_off + sb * detail::kQ8K6Ds;
        const float da = load_f32(ds);
        for (int hr = 0; hr < 2; ++hr) {  // rows 0-3, 4-7
          int32x4_t isum = vdupq_n_s32(0);
          for (int nh = 0; nh < 2; ++nh) {
            for (int i = 0; i < 4; ++i) {
              for (int h = 0; h < 2; ++h) {
                const int sub = 8 * nh + 2 * i + h;
                int8x16_t q[4];
                for (int vv = 0; vv < 4; ++vv) {
                  const int v = 4 * h + vv;
                  const uint8x16_t ql =
                      vld1q_u8(x + detail::q6_kx8_chunk(nh, v, 1 + (i & 1)) + 16 * hr);
                  const uint8x16_t qh = vld1q_u8(x + detail::q6_kx8_chunk(nh, v, 0) + 16 * hr);
                  const uint8x16_t lo = i < 2 ? vandq_u8(ql, m4) : vshrq_n_u8(ql, 4);
                  uint8x16_t hb = qh;
                  if (i == 1) hb = vshrq_n_u8(qh, 2);
                  if (i == 2) hb = vshrq_n_u8(qh, 4);
                  if (i == 3) hb = vshrq_n_u8(qh, 6);
                  q[vv] = vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(vandq_u8(hb, m3), 4)));
                }
                const auto* ya = reinterpret_cast<const int8_t*>(y + 128 * nh + 32 * i + 16 * h);
                const int8x16_t av = vld1q_s8(ya);
                int32x4_t s = vdupq_n_s32(detail::load_i32(ds + 4 + 4 * sub));
                s = dot4_lane<0>(s, q[0], av);
                s = dot4_lane<1>(s, q[1], av);
                s = dot4_lane<2>(s, q[2], av);
                s = dot4_lane<3>(s, q[3], av);
                int8_t scb[8];
                std::memcpy(scb, x + detail::kQ6_Kx8Scales + 8 * sub, 8);
                const int32_t sc4[4] = {scb[4 * hr], scb[4 * hr + 1], scb[4 * hr + 2],
                                        scb[4 * hr + 3]};
                isum = vmlaq_s32(isum, s, vld1q_s32(sc4));
              }
            }
          }
          float dwf[4];
          for (int r = 0; r < 4; ++r) dwf[r] = f16(x + 2 * (4 * hr + r)) * da;
          acc[hr] = vaddq_f32(acc[hr], vmulq_f32(vld1q_f32(dwf), vcvtq_f32_s32(isum)));
        }
      }
      float tmp[8];
      vst1q_f32(tmp, acc[0]);
      vst1q_f32(tmp + 4, acc[1]);
      float* o = out + static_cast<size_t>(c) * out_stride + static_cast<size_t>(g) * kPackRows;
      for (int r = 0; r < rows; ++r) o[r] = tmp[r];
    }
  }
}

// Q8_0x8 / Q5_0x8 and packed_gemm_for_type().
#include "backends/cpu/kernels/repack_legacy_neon-inl.h"  // NOLINT(build/include)
