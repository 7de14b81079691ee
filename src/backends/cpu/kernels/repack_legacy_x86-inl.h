// x86 Q8_0x8 / Q5_0x8 kernels (repack_internal.h), included at the end of repack_x86-inl.h inside
// the same per-ISA namespace. A 32-byte chunk holds 4 elements of each of 8 rows, so the dot with
// the 4 matching activation bytes broadcast leaves row r's partial dot in lane r.
//
// Numerics: the results are bit-identical to the row kernels' (vec_dot_x86-inl.h) for the same
// call, so repacking changes no output. GEMM (and GEMV under batch_invariant()) follows
// LegacyKernel::run (2..4 weight rows): the integer dots of a block's two halves (elements 0..15
// and 16..31) go into separate float accumulators, acc_h = fma(d_w * d_a, float(dot_h), acc_h),
// summed acc_0 + acc_1 at the end. A GEMV otherwise follows LegacyKernel::run_gemv / gemm_rows
// (x8_gemv_group): 8 accumulators per row (block position mod 4 x half, the first half's dot
// carrying the whole block's offset correction), 4-element partial dots for the last nb % 4
// blocks, its horizontal-sum order, and K chunks of kSumBlocks blocks for the offset types.
//
// Integer dots. Q8_0, AVX-512 VNNI: q + 128 (0..255) with vpdpbusd, the chain starting at the
// activation's -128 * Σ correction of that half. Q8_0, AVX2: maddubs needs one unsigned operand
// and would saturate at q + 128, so the sign trick: |q| times the activation with q's sign,
// maddubs pairs <= 2 * 128 * 127 (exact in int16), madd to int32 per chunk. Q5_0: q + 16 (0..31)
// from a nibble and a high bit moved to bit 4 by one shift of the repacked qh bytes; AVX2 adds
// the 4 chunks' maddubs of a half in int16 (<= 4 * 2 * 31 * 127 = 31496, exact) before one madd.
// NOLINT(build/header_guard): included once per target on purpose.

// Activation rows per pass over a group: 2 float accumulators each (the halves) plus an integer
// chain. AVX-512 VL keeps all in its 32 ymm registers; AVX2 (16) keeps the half's weight chunks
// and one row's chain in registers and lets the accumulators live in L1, which beats two passes
// of 4 rows (Q5_0 2048 x 640, 8 rows: 0.23 -> 0.21 ms; and one pass over weights that come from
// memory, where the batched decode step reads them).
inline constexpr int kPackedColsX8 = 8;

// The 32 weight bytes of chunk j (0..3) of half h of a block, as fed to the integer dot: Q8_0
// VNNI q + 128, Q8_0 AVX2 signed q, Q5_0 q + 16.
template <bool kQ8>
GENIEX_X86_TARGET inline __m256i x8_weights(const uint8_t* x, __m256i qh, int h, int j) {
  if constexpr (kQ8) {
    const __m256i q = loadu256(x + detail::kQ8_0x8Qs + 32 * (4 * h + j));
#if GENIEX_X86_VNNI
    return _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
#else
    return q;
#endif
  } else {
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    const __m256i bits = loadu256(x + detail::kQ5_0x8Qs + 32 * j);
    if (h == 0) {
      return _mm256_or_si256(_mm256_and_si256(bits, m4),
                             _mm256_and_si256(_mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - j)), b4));
    }
    return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4),
                           _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(j)), b4));
  }
}

template <bool kQ8, int NC>
GENIEX_X86_TARGET inline void x8_tile(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                      float* out, size_t out_stride, int rows, const uint8_t* pf) {
  constexpr size_t kBlock = kQ8 ? detail::kQ8_0x8Block : detail::kQ5_0x8Block;
  __m256 acc[NC][2];
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  const size_t ds_off = nb * detail::kQ8x4Qs;
  for (size_t ib = 0; ib < nb; ++ib) {
    const uint8_t* x = w + ib * kBlock;
    if (pf != nullptr) {  // this block's lines of the group that x8_gemm prefetches (to L2)
      const char* p = reinterpret_cast<const char*>(pf + ib * kBlock);
#pragma GCC unroll 8
      for (size_t o = 0; o < kBlock; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
    }
    __m256i qh = _mm256_setzero_si256();
    if constexpr (!kQ8) qh = loadu256(x + detail::kQ5_0x8Qh);
    const __m256 dw = _mm256_cvtph_ps(loadu128(x));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#if GENIEX_X86_VNNI
      // The half's 4 weight chunks once, then one short vpdpbusd chain per activation row (the
      // rows' chains overlap): 4 + 2 NC + a few registers.
      __m256i q[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) q[j] = x8_weights<kQ8>(x, qh, h, j);
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * detail::kQ8x4Qs + 16 * h;
        const uint8_t* ds = a[c] + ds_off + ib * detail::kQ8x8Ds;
        __m256i t = _mm256_set1_epi32(detail::load_i32(ds + 4 + 4 * h));
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          t = _mm256_dpbusd_epi32(t, q[j], _mm256_set1_epi32(detail::load_i32(y + 4 * j)));
        }
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(load_f32(ds)));
        acc[c][h] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[c][h]);
      }
#else
      // AVX2 (16 registers): the half's 4 weight chunks once (Q8_0: and their magnitudes), then
      // row by row one short dot chain and its float update; the 2 NC float accumulators are
      // left to memory when they do not fit (NC > 4), never the chunks.
      __m256i q[4];
      [[maybe_unused]] __m256i aq[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        q[j] = x8_weights<kQ8>(x, qh, h, j);
        if constexpr (kQ8) aq[j] = _mm256_sign_epi8(q[j], q[j]);
      }
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        const uint8_t* y = a[c] + ib * detail::kQ8x4Qs + 16 * h;
        const uint8_t* ds = a[c] + ds_off + ib * detail::kQ8x8Ds;
        __m256i t;
        if constexpr (kQ8) {
          t = _mm256_add_epi32(
              _mm256_add_epi32(dot_i8_abs(aq[0], q[0], _mm256_set1_epi32(detail::load_i32(y))),
                               dot_i8_abs(aq[1], q[1], _mm256_set1_epi32(detail::load_i32(y + 4)))),
              _mm256_add_epi32(
                  dot_i8_abs(aq[2], q[2], _mm256_set1_epi32(detail::load_i32(y + 8))),
                  dot_i8_abs(aq[3], q[3], _mm256_set1_epi32(detail::load_i32(y + 12)))));
        } else {  // int16 sums -> int32, plus the -16 * Σ correction
          const __m256i s16 = _mm256_add_epi16(
              _mm256_add_epi16(
                  _mm256_maddubs_epi16(q[0], _mm256_set1_epi32(detail::load_i32(y))),
                  _mm256_maddubs_epi16(q[1], _mm256_set1_epi32(detail::load_i32(y + 4)))),
              _mm256_add_epi16(
                  _mm256_maddubs_epi16(q[2], _mm256_set1_epi32(detail::load_i32(y + 8))),
                  _mm256_maddubs_epi16(q[3], _mm256_set1_epi32(detail::load_i32(y + 12)))));
          t = _mm256_add_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)),
                               _mm256_set1_epi32(detail::load_i32(ds + 4 + 4 * h)));
        }
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(load_f32(ds)));
        acc[c][h] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[c][h]);
      }
#endif
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    float* o = out + static_cast<size_t>(c) * out_stride;
    const __m256 v = _mm256_add_ps(acc[c][0], acc[c][1]);
    if (rows == 8) {
      _mm256_storeu_ps(o, v);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, v);
      for (int r = 0; r < rows; ++r) o[r] = tmp[r];
    }
  }
}

// Integer dot of 4-byte groups, added to acc (int32 lanes; exact for the weights above).
template <bool kQ8>
GENIEX_X86_TARGET inline __m256i x8_dot(__m256i acc, __m256i q, __m256i av) {
#if GENIEX_X86_VNNI
  return _mm256_dpbusd_epi32(acc, q, av);
#else
  if constexpr (kQ8) {
    return _mm256_add_epi32(acc, dot_i8_abs(_mm256_sign_epi8(q, q), q, av));
  } else {
    return _mm256_add_epi32(acc, dot_u8_i8(q, av));
  }
#endif
}

// One group x one activation row in LegacyKernel::run_gemv's order (see the top of this file):
// A[k] / A[4 + k] take the first / second half of the blocks at position k mod 4 of a K chunk;
// the chunk's last nb % 4 blocks add their 8 four-element dots to A[0..7]; a chunk's result is
// ((A0 + A4) + (A2 + A6)) + ((A1 + A5) + (A3 + A7)) + 0, and chunk results are added in order.
// G groups in lockstep (gemv_lockstep: each its own memory stream), block step by block step;
// every group's arithmetic is the single-group order described above.
template <bool kQ8, int G>
GENIEX_X86_TARGET void x8_gemv_groups(size_t nb, const uint8_t* const* wg, const uint8_t* a,
                                      float* const* out, const int* rows) {
  constexpr size_t kBlock = kQ8 ? detail::kQ8_0x8Block : detail::kQ5_0x8Block;
  // The row kernels' offset types (kActSums): their GEMV works in K chunks of kSumBlocks.
  constexpr bool kOffset = !kQ8 || GENIEX_X86_VNNI;
  const size_t kc = kOffset ? kSumBlocks : nb;
  const uint8_t* ds = a + nb * detail::kQ8x4Qs;
  __m256 res[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) res[g] = _mm256_setzero_ps();
  for (size_t k0 = 0; k0 < nb; k0 += kc) {
    const size_t k1 = std::min(nb, k0 + kc);
    __m256 acc[G][8];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) acc[g][i] = _mm256_setzero_ps();
    }
    const size_t k4 = k0 + (k1 - k0) / 4 * 4;
    // Whole steps of 4 blocks (unrolled, so a group's 8 accumulators stay in registers).
    for (size_t ib = k0; ib < k4; ib += 4) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
        for (int pos = 0; pos < 4; ++pos) {
          const size_t b = ib + static_cast<size_t>(pos);
          const uint8_t* x = wg[g] + b * kBlock;
          stream_prefetch(x, kBlock);
          const uint8_t* y = a + b * detail::kQ8x4Qs;
          const uint8_t* d = ds + b * detail::kQ8x8Ds;
          __m256i qh = _mm256_setzero_si256();
          if constexpr (!kQ8) qh = loadu256(x + detail::kQ5_0x8Qh);
          const __m256 scale =
              _mm256_mul_ps(_mm256_cvtph_ps(loadu128(x)), _mm256_set1_ps(load_f32(d)));
          const int32_t corr = kOffset ? detail::load_i32(d + 4) + detail::load_i32(d + 8) : 0;
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            __m256i t = _mm256_set1_epi32(h == 0 ? corr : 0);
#pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
              t = x8_dot<kQ8>(t, x8_weights<kQ8>(x, qh, h, j), bcast_i32(y + 16 * h + 4 * j));
            }
            acc[g][4 * h + pos] =
                _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[g][4 * h + pos]);
          }
        }
      }
    }
    // The last nb % 4 blocks: 8 four-element dots each.
    for (size_t ib = k4; ib < k1; ++ib) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const uint8_t* x = wg[g] + ib * kBlock;
        const uint8_t* y = a + ib * detail::kQ8x4Qs;
        const uint8_t* d = ds + ib * detail::kQ8x8Ds;
        __m256i qh = _mm256_setzero_si256();
        if constexpr (!kQ8) qh = loadu256(x + detail::kQ5_0x8Qh);
        const __m256 scale =
            _mm256_mul_ps(_mm256_cvtph_ps(loadu128(x)), _mm256_set1_ps(load_f32(d)));
        const int32_t corr = kOffset ? detail::load_i32(d + 4) + detail::load_i32(d + 8) : 0;
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) {
            const __m256i t =
                x8_dot<kQ8>(_mm256_set1_epi32(h == 0 && j == 0 ? corr : 0),
                            x8_weights<kQ8>(x, qh, h, j), bcast_i32(y + 16 * h + 4 * j));
            acc[g][4 * h + j] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[g][4 * h + j]);
          }
        }
      }
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m256* A = acc[g];
      const __m256 v =
          _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(A[0], A[4]), _mm256_add_ps(A[2], A[6])),
                        _mm256_add_ps(_mm256_add_ps(A[1], A[5]), _mm256_add_ps(A[3], A[7])));
      const __m256 chunk = _mm256_add_ps(v, _mm256_setzero_ps());
      res[g] = k0 == 0 ? chunk : _mm256_add_ps(res[g], chunk);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    if (rows[g] == 8) {
      _mm256_storeu_ps(out[g], res[g]);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, res[g]);
      for (int r = 0; r < rows[g]; ++r) out[g][r] = tmp[r];
    }
  }
}

// Groups in chunks of about 128 KiB (L2), and within a chunk tile by tile over its groups: a
// tile's activation rows stay in L1 while the chunk's weights stream past from L2, and each chunk
// comes from memory once for all tiles (a GEMV is one linear pass). Measured with
// bench/bench_matmul (Q8_0, one thread, VNNI): against 32 KiB chunks taken group by group by
// every tile, 4096 x 2048 with 8 rows 1.2 -> 0.6 ms and 16 rows 2.0 -> 1.2 ms. AVX2 (measured
// there; VNNI left as it was): the last tile over a chunk also prefetches the next chunk into L2,
// a block's lines per block it computes, so a matrix streamed from memory no longer stalls each
// chunk's first tile (Q8_0 262144 x 640, one thread: 2 rows -15 %, 4 and 8 rows -12 %).
template <bool kQ8>
GENIEX_X86_TARGET void x8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                               size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * (kQ8 ? detail::kQ8_0x8Block : detail::kQ5_0x8Block);
  if (nc == 1 && !batch_invariant()) {
    packed_gemv_lockstep(nr, gb, w, out,
                         [&]<int G>(const uint8_t* const* ws, float* const* os, const int* rs) {
                           x8_gemv_groups<kQ8, G>(nb, ws, a, os, rs);
                         });
    return;
  }
  // A tile's activation rows and its group are read once per block: keep them within L1
  // (32 KiB; 8 rows of K = 2048 are 22 KiB, a Q8_0 group 17 KiB), else take 4 rows per pass.
  // AVX2: the last tile over a chunk prefetches the next chunk, group for group, block for
  // block, so the next chunk's first tile reads L2 instead of waiting on memory.
  const int cols =
      kPackedColsX8 > 4 && static_cast<size_t>(kPackedColsX8) * a_stride + gb > (28u << 10)
          ? 4
          : kPackedColsX8;
  packed_gemm_tiles<PackedTiling{.chunk_bytes = 128u << 10,
                                 .max_cols = kPackedColsX8,
                                 .prefetch_next_chunk = !GENIEX_X86_VNNI}>(
      cols, gb, w, nr, a, a_stride, nc, out, out_stride,
      [&]<int NC>(const uint8_t* wg, const uint8_t* const* rows, float* o, int nrows,
                  const uint8_t* pf)
          GENIEX_X86_TARGET { x8_tile<kQ8, NC>(nb, wg, rows, o, out_stride, nrows, pf); });
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
