// NEON Q8_0x8 / Q5_0x8 kernels (repack_internal.h), included at the end of repack_neon-inl.h
// inside the same per-target namespace. 16 bytes of a chunk hold 4 elements of each of 4 rows;
// sdot by lane (baseline: vmull + pairwise adds; products <= 128 * 127, pairs exact in int16)
// with the 4 matching activation bytes leaves row r's partial dot in lane r.
//
// Numerics: the results are bit-identical to the row kernels' (vec_dot_neon-inl.h) for the same
// call. GEMM (and GEMV under batch_invariant()) follows LegacyKernel::run (also the i8mm tiles):
// each block's whole integer dot, fma(d_w * d_a, float(dot)) into one accumulator per row. A GEMV
// otherwise follows run_gemv (x8_gemv_group): 4 accumulators per row (block position mod 4),
// summed (A0 + A1) + (A2 + A3) + 0, then the last nb % 4 blocks added one by one as
// sum + (d_w * d_a) * float(dot). Q8_0 weights are fed signed (no correction); Q5_0 as q + 16,
// the chain starting at the activation's -16 * Σ corrections.
// NOLINT(build/header_guard): included once per target on purpose.

// Chunk j (0..3) of half h of a block, rows 4 hr..4 hr + 3, as fed to the dot.
template <bool kQ8>
GENIEX_NEON_TARGET inline int8x16_t x8_weights(const uint8_t* x, uint8x16_t qh, int h, int j,
                                               int hr) {
  if constexpr (kQ8) {
    return vld1q_s8(
        reinterpret_cast<const int8_t*>(x + detail::kQ8_0x8Qs + 32 * (4 * h + j) + 16 * hr));
  } else {
    const uint8x16_t bits = vld1q_u8(x + detail::kQ5_0x8Qs + 32 * j + 16 * hr);
    const uint8x16_t lo = h == 0 ? vandq_u8(bits, vdupq_n_u8(0x0F)) : vshrq_n_u8(bits, 4);
    // Bit j (h = 0) or 4 + j (h = 1) of each qh byte to bit 4.
    const uint8x16_t hb = vshlq_u8(qh, vdupq_n_s8(static_cast<int8_t>(h == 0 ? 4 - j : -j)));
    return vreinterpretq_s8_u8(vorrq_u8(lo, vandq_u8(hb, vdupq_n_u8(0x10))));
  }
}

template <bool kQ8, int NC>
GENIEX_NEON_TARGET inline void x8_tile(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                       float* out, size_t out_stride, int rows) {
  constexpr size_t kBlock = kQ8 ? detail::kQ8_0x8Block : detail::kQ5_0x8Block;
  float32x4_t acc[NC][2];
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = vdupq_n_f32(0.0f);
  const size_t ds_off = nb * detail::kQ8x4Qs;
  for (size_t ib = 0; ib < nb; ++ib) {
    const uint8_t* x = w + ib * kBlock;
    const float32x4_t dw[2] = {vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(x))),
                               vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(x + 8)))};
    uint8x16_t qh[2] = {vdupq_n_u8(0), vdupq_n_u8(0)};
    if constexpr (!kQ8) {
      qh[0] = vld1q_u8(x + detail::kQ5_0x8Qh);
      qh[1] = vld1q_u8(x + detail::kQ5_0x8Qh + 16);
    }
    int32x4_t s[NC][2];
    for (int c = 0; c < NC; ++c) {
      const uint8_t* ds = a[c] + ds_off + ib * detail::kQ8x8Ds;
      const int32_t corr = kQ8 ? 0 : detail::load_i32(ds + 4) + detail::load_i32(ds + 8);
      s[c][0] = s[c][1] = vdupq_n_s32(corr);
    }
    for (int h = 0; h < 2; ++h) {
      int8x16_t q[4][2];
      for (int j = 0; j < 4; ++j) {
        for (int hr = 0; hr < 2; ++hr) q[j][hr] = x8_weights<kQ8>(x, qh[hr], h, j, hr);
      }
      for (int c = 0; c < NC; ++c) {
        const int8x16_t av =
            vld1q_s8(reinterpret_cast<const int8_t*>(a[c] + ib * detail::kQ8x4Qs + 16 * h));
        for (int hr = 0; hr < 2; ++hr) {
          int32x4_t t = s[c][hr];
          t = dot4_lane<0>(t, q[0][hr], av);
          t = dot4_lane<1>(t, q[1][hr], av);
          t = dot4_lane<2>(t, q[2][hr], av);
          s[c][hr] = dot4_lane<3>(t, q[3][hr], av);
        }
      }
    }
    for (int c = 0; c < NC; ++c) {
      const float da = load_f32(a[c] + ds_off + ib * detail::kQ8x8Ds);
      for (int hr = 0; hr < 2; ++hr) {
        acc[c][hr] = vfmaq_f32(acc[c][hr], vcvtq_f32_s32(s[c][hr]), vmulq_n_f32(dw[hr], da));
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

// Whole integer block dots of rows 4 hr..4 hr + 3 with activation block y (corrections included).
template <bool kQ8>
GENIEX_NEON_TARGET inline int32x4_t x8_block_dot(const uint8_t* x, const uint8_t* y,
                                                 const uint8_t* d, int hr) {
  uint8x16_t qh = vdupq_n_u8(0);
  if constexpr (!kQ8) qh = vld1q_u8(x + detail::kQ5_0x8Qh + 16 * hr);
  int32x4_t s = vdupq_n_s32(kQ8 ? 0 : detail::load_i32(d + 4) + detail::load_i32(d + 8));
  for (int h = 0; h < 2; ++h) {
    const int8x16_t av = vld1q_s8(reinterpret_cast<const int8_t*>(y + 16 * h));
    s = dot4_lane<0>(s, x8_weights<kQ8>(x, qh, h, 0, hr), av);
    s = dot4_lane<1>(s, x8_weights<kQ8>(x, qh, h, 1, hr), av);
    s = dot4_lane<2>(s, x8_weights<kQ8>(x, qh, h, 2, hr), av);
    s = dot4_lane<3>(s, x8_weights<kQ8>(x, qh, h, 3, hr), av);
  }
  return s;
}

// One group x one activation row in LegacyKernel::run_gemv's order (see the top of this file).
template <bool kQ8>
GENIEX_NEON_TARGET void x8_gemv_group(size_t nb, const uint8_t* w, const uint8_t* a, float* out,
                                      int rows) {
  constexpr size_t kBlock = kQ8 ? detail::kQ8_0x8Block : detail::kQ5_0x8Block;
  const uint8_t* ds = a + nb * detail::kQ8x4Qs;
  const size_t nb4 = nb / 4 * 4;
  float tmp[8];
  for (int hr = 0; hr < 2; ++hr) {
    float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                          vdupq_n_f32(0.0f)};
    for (size_t ib = 0; ib < nb4; ++ib) {
      const uint8_t* x = w + ib * kBlock;
      const uint8_t* d = ds + ib * detail::kQ8x8Ds;
      const int32x4_t s = x8_block_dot<kQ8>(x, a + ib * detail::kQ8x4Qs, d, hr);
      const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(x + 8 * hr)));
      acc[ib % 4] = vfmaq_f32(acc[ib % 4], vcvtq_f32_s32(s), vmulq_n_f32(dw, load_f32(d)));
    }
    float32x4_t sum = vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3]));
    sum = vaddq_f32(sum, vdupq_n_f32(0.0f));
    for (size_t ib = nb4; ib < nb; ++ib) {
      const uint8_t* x = w + ib * kBlock;
      const uint8_t* d = ds + ib * detail::kQ8x8Ds;
      const int32x4_t s = x8_block_dot<kQ8>(x, a + ib * detail::kQ8x4Qs, d, hr);
      const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(x + 8 * hr)));
      sum = vaddq_f32(sum, vmulq_f32(vmulq_n_f32(dw, load_f32(d)), vcvtq_f32_s32(s)));
    }
    vst1q_f32(tmp + 4 * hr, sum);
  }
  for (int r = 0; r < rows; ++r) out[r] = tmp[r];
}

template <bool kQ8>
GENIEX_NEON_TARGET void x8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                                size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * (kQ8 ? detail::kQ8_0x8Block : detail::kQ5_0x8Block);
  const int64_t ngroups = (nr + kPackRows - 1) / kPackRows;
  if (nc == 1 && !batch_invariant()) {
    for (int64_t g = 0; g < ngroups; ++g) {
      x8_gemv_group<kQ8>(nb, w + static_cast<size_t>(g) * gb, a, out + g * kPackRows,
                         static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows)));
    }
    return;
  }
  packed_gemm_tiles<PackedTiling{.chunk_bytes = 32u << 10, .max_cols = kPackedCols}>(
      kPackedCols, gb, w, nr, a, a_stride, nc, out, out_stride,
      [&]<int NC>(const uint8_t* wg, const uint8_t* const* rows, float* o, int nrows,
                  const uint8_t* /*pf*/)
          GENIEX_NEON_TARGET { x8_tile<kQ8, NC>(nb, wg, rows, o, out_stride, nrows); });
}

PackedGemmFn packed_gemm_for_type(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0: return q4_0x8_gemm;
    case GgmlType::kQ4_K: return q4_kx8_gemm;
    case GgmlType::kQ6_K: return q6_kx8_gemm;
    case GgmlType::kQ8_0: return x8_gemm<true>;
    case GgmlType::kQ5_0: return x8_gemm<false>;
    default: return nullptr;
  }
}
