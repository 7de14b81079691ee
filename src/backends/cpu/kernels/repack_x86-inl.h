// x86 packed (row-interleaved) kernels, included after vec_dot_x86-inl.h by vec_dot_avx2.cpp and
// vec_dot_avx512.cpp inside the same per-ISA namespace (same GENIEX_X86_TARGET / GENIEX_X86_VNNI).
// Q4_0x8 (repack.h): one 32-byte chunk holds 4 elements of each of 8 rows, so a dot with the
// matching 4 activation bytes broadcast to every lane leaves row r's partial dot in lane r. A
// block costs 8 vpdpbusd (AVX2: 8 maddubs summed in int16, one madd) per activation row for 8
// weight rows, and the 8 row results are scaled and accumulated as one float vector: no
// horizontal sums, one linear weight stream per group.
// NOLINT(build/header_guard): included once per target on purpose.

#define GENIEX_PACKED_TARGET GENIEX_X86_TARGET
#include "backends/cpu/kernels/packed_tiles-inl.h"  // NOLINT(build/include)
#undef GENIEX_PACKED_TARGET

// The 4 bytes at p in every 32-bit lane, by one broadcasting load (vbroadcastss m32).
GENIEX_X86_TARGET inline __m256i bcast_i32(const uint8_t* p) {
  return _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(p)));
}

// Activation rows per pass over a group: a float accumulator each, plus the 8 unpacked weight
// vectors (32 ymm registers with AVX-512 VL, 16 with AVX2).
inline constexpr int kPackedCols = GENIEX_X86_VNNI ? 8 : 4;

// One group x NC activation rows. The integer dots of the NC rows run as NC independent chains
// (interleaved per chunk, so vpdpbusd latency overlaps); with few rows each chain is split in
// kSplit partial sums instead. Chunks are unpacked one at a time to keep register pressure low
// (AVX2 has 16 ymm registers).
template <int NC>
GENIEX_X86_TARGET inline void q4_0x8_tile(size_t nb, const uint8_t* w, const uint8_t* const* a,
                                          float* out, size_t out_stride, int rows) {
  constexpr int kSplit = NC >= 4 ? 1 : NC == 1 ? 4 : 2;
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NC];
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
  const size_t ds_off = nb * detail::kQ8x4Qs;
  for (size_t ib = 0; ib < nb; ++ib) {
    const uint8_t* x = w + ib * detail::kQ4_0x8Block;
    if constexpr (NC == 1) stream_prefetch(x, detail::kQ4_0x8Block);
    const uint8_t* y[NC];
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) y[c] = a[c] + ib * detail::kQ8x4Qs;
    __m256i s[NC][kSplit];
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
#pragma GCC unroll 4
      for (int j = 0; j < kSplit; ++j) s[c][j] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      const __m256i bits = loadu256(x + 16 + 32 * m);
      const __m256i lo = _mm256_and_si256(bits, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        const __m256i alo = _mm256_set1_epi32(detail::load_i32(y[c] + 4 * m));
        const __m256i ahi = _mm256_set1_epi32(detail::load_i32(y[c] + 16 + 4 * m));
        __m256i& s0 = s[c][(2 * m) % kSplit];
        __m256i& s1 = s[c][(2 * m + 1) % kSplit];
#if GENIEX_X86_VNNI
        s0 = _mm256_dpbusd_epi32(s0, lo, alo);
        s1 = _mm256_dpbusd_epi32(s1, hi, ahi);
#else
        // maddubs pairs are <= 2 * 15 * 127 in magnitude: 8 of them add up exactly in int16.
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(lo, alo));
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(hi, ahi));
#endif
      }
    }
    const __m256 dw = _mm256_cvtph_ps(loadu128(x));
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
      const uint8_t* ds = a[c] + ds_off + ib * detail::kQ8x4Ds;
      __m256i t = s[c][0];
#pragma GCC unroll 4
      for (int j = 1; j < kSplit; ++j) {
#if GENIEX_X86_VNNI
        t = _mm256_add_epi32(t, s[c][j]);
#else
        t = _mm256_add_epi16(t, s[c][j]);
#endif
      }
#if !GENIEX_X86_VNNI
      t = _mm256_madd_epi16(t, _mm256_set1_epi16(1));
#endif
      t = _mm256_add_epi32(t, _mm256_set1_epi32(detail::load_i32(ds + 4)));
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(load_f32(ds)));
      acc[c] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[c]);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    float* o = out + static_cast<size_t>(c) * out_stride;
    if (rows == 8) {
      _mm256_storeu_ps(o, acc[c]);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, acc[c]);
      for (int r = 0; r < rows; ++r) o[r] = tmp[r];
    }
  }
}

// A packed GEMV as gemv_lockstep() walks it: the groups of `gemv_streams()` parts of the matrix
// in turn, handed to kernel.template operator()<G>(groups, outputs, rows) G at a time (the last
// call of a part may have fewer).
template <typename K>
inline void packed_gemv_lockstep(int64_t nr, size_t gb, const uint8_t* w, float* out,
                                 const K& kernel) {
  const int64_t ngroups = (nr + kPackRows - 1) / kPackRows;
  gemv_lockstep(ngroups, gemv_streams(), [&](int n, const int64_t* gs) {
    const uint8_t* ws[kMaxGemvStreams];
    float* os[kMaxGemvStreams];
    int rs[kMaxGemvStreams];
    for (int i = 0; i < n; ++i) {
      ws[i] = w + static_cast<size_t>(gs[i]) * gb;
      os[i] = out + gs[i] * kPackRows;
      rs[i] = static_cast<int>(std::min<int64_t>(kPackRows, nr - gs[i] * kPackRows));
    }
    switch (n) {
      case 4: kernel.template operator()<4>(ws, os, rs); break;
      case 3: kernel.template operator()<3>(ws, os, rs); break;
      case 2: kernel.template operator()<2>(ws, os, rs); break;
      default: kernel.template operator()<1>(ws, os, rs); break;
    }
  });
}

// G groups x one activation row in lockstep, block by block: the weights then arrive as G
// concurrent memory streams (one core reads ~20 GB/s from 2 interleaved streams against ~16 from
// one). Each group's arithmetic is q4_0x8_tile<1>'s exactly, so the results are its bits.
template <int G>
GENIEX_X86_TARGET inline void q4_0x8_gemv_lockstep(size_t nb, const uint8_t* const* w,
                                                   const uint8_t* a, float* const* out,
                                                   const int* rows) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
  const size_t ds_off = nb * detail::kQ8x4Qs;
  for (size_t ib = 0; ib < nb; ++ib) {
    const uint8_t* y = a + ib * detail::kQ8x4Qs;
    const uint8_t* ds = a + ds_off + ib * detail::kQ8x4Ds;
    const __m256 ad = _mm256_set1_ps(load_f32(ds));
    const __m256i corr = bcast_i32(ds + 4);
    // The block's 8 activation words, broadcast once for all G groups, each by a load that
    // broadcasts (GCC kept set1_epi32(load_i32(...)) in general registers and broadcast them
    // again per group: two uops and a register-file crossing each).
    __m256i alo[4], ahi[4];
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      alo[m] = bcast_i32(y + 4 * m);
      ahi[m] = bcast_i32(y + 16 + 4 * m);
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const uint8_t* x = w[g] + ib * detail::kQ4_0x8Block;
      stream_prefetch(x, detail::kQ4_0x8Block);
      __m256i s[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) s[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        const __m256i bits = loadu256(x + 16 + 32 * m);
        const __m256i lo = _mm256_and_si256(bits, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
#if GENIEX_X86_VNNI
        s[(2 * m) % 4] = _mm256_dpbusd_epi32(s[(2 * m) % 4], lo, alo[m]);
        s[(2 * m + 1) % 4] = _mm256_dpbusd_epi32(s[(2 * m + 1) % 4], hi, ahi[m]);
#else
        s[(2 * m) % 4] = _mm256_add_epi16(s[(2 * m) % 4], _mm256_maddubs_epi16(lo, alo[m]));
        s[(2 * m + 1) % 4] = _mm256_add_epi16(s[(2 * m + 1) % 4], _mm256_maddubs_epi16(hi, ahi[m]));
#endif
      }
      __m256i t = s[0];
#pragma GCC unroll 4
      for (int j = 1; j < 4; ++j) {
#if GENIEX_X86_VNNI
        t = _mm256_add_epi32(t, s[j]);
#else
        t = _mm256_add_epi16(t, s[j]);
#endif
      }
#if !GENIEX_X86_VNNI
      t = _mm256_madd_epi16(t, _mm256_set1_epi16(1));
#endif
      t = _mm256_add_epi32(t, corr);
      const __m256 scale = _mm256_mul_ps(_mm256_cvtph_ps(loadu128(x)), ad);
      acc[g] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[g]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    if (rows[g] == 8) {
      _mm256_storeu_ps(out[g], acc[g]);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, acc[g]);
      for (int r = 0; r < rows[g]; ++r) out[g][r] = tmp[r];
    }
  }
}

// Groups are taken in chunks of about 32 KiB so a chunk stays in L1/L2 while every tile of
// kPackedCols activation rows streams over it; with one activation row (GEMV) this is a single
// linear pass over the weights.
GENIEX_X86_TARGET void q4_0x8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                                   size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * detail::kQ4_0x8Block;
  if (nc == 1) {
    packed_gemv_lockstep(nr, gb, w, out,
                         [&]<int G>(const uint8_t* const* ws, float* const* os, const int* rs) {
                           q4_0x8_gemv_lockstep<G>(nb, ws, a, os, rs);
                         });
    return;
  }
  packed_gemm_tiles<PackedTiling{.chunk_bytes = 32u << 10, .max_cols = kPackedCols}>(
      kPackedCols, gb, w, nr, a, a_stride, nc, out, out_stride,
      [&]<int NC>(const uint8_t* wg, const uint8_t* const* rows, float* o, int nrows,
                  const uint8_t* /*pf*/)
          GENIEX_X86_TARGET { q4_0x8_tile<NC>(nb, wg, rows, o, out_stride, nrows); });
}

// Activation rows per pass of the Q6_Kx8 kernel.
inline constexpr int kPackedColsK = GENIEX_X86_VNNI ? 4 : 2;

// Q4_Kx8. Chunk t of half-pair j holds elements 4t..4t+3 of sub-blocks 2j (low nibbles) and
// 2j + 1 (high nibbles) of the 8 rows (lane r: row r), so a maddubs with the matching 4
// activation bytes broadcast leaves row r's two int16 pair sums in lane r. The 8 chunks of a
// sub-block share its scale, so their maddubs results are added in int16 first (each pair sum is
// at most 2 * 15 * 127 = 3810 in magnitude, 8 of them 30480 < 32767: exact) and the scale is
// applied once per sub-block by one madd (8 madds per super-block and activation row instead of
// 64). The super-block's integer sum is the row kernel's exactly; it is scaled by one fma per
// super-block (d * dy), the mins by another (dmin * dy times Σ m * bsum), out = acc - accm.
// The float order is not the row kernel's (which keeps 8 lane sums per row), so the packed
// results differ from it in the last bits; they are the same for every number of activation
// rows (each row's chain of operations does not depend on the others).
inline constexpr int kPackedColsQ4K = 4;

template <int NC>
GENIEX_X86_TARGET inline void q4_kx8_tile(size_t nsb, const uint8_t* w, const uint8_t* const* a,
                                          float* out, size_t out_stride, int rows) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NC], accm[NC];
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    acc[c] = _mm256_setzero_ps();
    accm[c] = _mm256_setzero_ps();
  }
  const size_t ds_off = nsb * detail::kQ8KxQs;
  for (size_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* x = w + sb * detail::kQ4_Kx8Block;
    if constexpr (NC == 1) stream_prefetch(x, detail::kQ4_Kx8Block);
    const uint8_t* y[NC];
    __m256i st[NC];
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
      y[c] = a[c] + sb * detail::kQ8KxQs;
      st[c] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      // The t loop stays rolled: unrolled, GCC hoists all 16 NC maddubs of the loop ahead of
      // their adds and spills them (measured 16 % slower at NC = 4).
      __m256i plo[NC], phi[NC];
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        plo[c] = _mm256_setzero_si256();
        phi[c] = _mm256_setzero_si256();
      }
#pragma GCC unroll 1
      for (int t = 0; t < 8; ++t) {
        const __m256i bits = loadu256(x + detail::kQ4_Kx8Qs + 32 * (8 * j + t));
        const __m256i lo = _mm256_and_si256(bits, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) {
          plo[c] = _mm256_add_epi16(
              plo[c],
              _mm256_maddubs_epi16(lo, _mm256_set1_epi32(detail::load_i32(y[c] + 64 * j + 4 * t))));
          phi[c] = _mm256_add_epi16(
              phi[c], _mm256_maddubs_epi16(
                          hi, _mm256_set1_epi32(detail::load_i32(y[c] + 64 * j + 32 + 4 * t))));
        }
      }
      // Sub-block scales of rows 0..7 (bytes), each in both int16 halves of its row's lane.
      const __m256i sl = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
          reinterpret_cast<const __m128i*>(x + detail::kQ4_Kx8Scales + 8 * (2 * j))));
      const __m256i sh = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
          reinterpret_cast<const __m128i*>(x + detail::kQ4_Kx8Scales + 8 * (2 * j + 1))));
      const __m256i sl2 = _mm256_or_si256(sl, _mm256_slli_epi32(sl, 16));
      const __m256i sh2 = _mm256_or_si256(sh, _mm256_slli_epi32(sh, 16));
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c) {
        st[c] = madd_acc(madd_acc(st[c], plo[c], sl2), phi[c], sh2);
      }
    }
    const __m256 dw = _mm256_cvtph_ps(loadu128(x));
    const __m256 dmin = _mm256_cvtph_ps(loadu128(x + 16));
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
      const uint8_t* ds = a[c] + ds_off + sb * detail::kQ8KxDs;
      const __m256 dy = _mm256_set1_ps(load_f32(ds));
      __m256i mp = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m256i mn = _mm256_cvtepu8_epi16(loadu128(x + detail::kQ4_Kx8Mins + 16 * p));
        mp = madd_acc(mp, mn, _mm256_set1_epi32(detail::load_i32(ds + 4 + 4 * p)));
      }
      acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dy), _mm256_cvtepi32_ps(st[c]), acc[c]);
      accm[c] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, dy), _mm256_cvtepi32_ps(mp), accm[c]);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    const __m256 v = _mm256_sub_ps(acc[c], accm[c]);
    float* o = out + static_cast<size_t>(c) * out_stride;
    if (rows == 8) {
      _mm256_storeu_ps(o, v);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, v);
      for (int r = 0; r < rows; ++r) o[r] = tmp[r];
    }
  }
}

// G groups x one activation row in lockstep, super-block by super-block (gemv_lockstep: each
// group its own memory stream); each group's arithmetic is q4_kx8_tile<1>'s, so the same bits.
// The groups share each 32-byte step: the activation bytes are broadcast once for all of them,
// and the step loop runs two at a time. The weight prefetch goes in four quarter-block bursts,
// one per sub-block pair, instead of one 19-line burst per super-block. Against the previous
// form (one group after the other, step loop rolled, one burst) with G = 2, in one process
// (bench/gemv_memory, alternating; docs/performance.md): from cache ~1.3-1.5x, from DRAM
// +3-11 %.
inline constexpr size_t kQ4_Kx8Quarter = detail::kQ4_Kx8Block / 4;  // 296 bytes
template <int G>
GENIEX_X86_TARGET inline void q4_kx8_gemv_lockstep(size_t nsb, const uint8_t* const* w,
                                                   const uint8_t* a, float* const* out,
                                                   const int* rows) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[G], accm[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    acc[g] = _mm256_setzero_ps();
    accm[g] = _mm256_setzero_ps();
  }
  const size_t ds_off = nsb * detail::kQ8KxQs;
  for (size_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* y = a + sb * detail::kQ8KxQs;
    const uint8_t* ds = a + ds_off + sb * detail::kQ8KxDs;
    const __m256 dy = _mm256_set1_ps(load_f32(ds));
    const uint8_t* x[G];
    __m256i st[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      x[g] = w[g] + sb * detail::kQ4_Kx8Block;
      st[g] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        stream_prefetch(x[g] + kQ4_Kx8Quarter * j, kQ4_Kx8Quarter);
      }
      __m256i plo[G], phi[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        plo[g] = _mm256_setzero_si256();
        phi[g] = _mm256_setzero_si256();
      }
#pragma GCC unroll 2
      for (int t = 0; t < 8; ++t) {
        const __m256i ylo = _mm256_set1_epi32(detail::load_i32(y + 64 * j + 4 * t));
        const __m256i yhi = _mm256_set1_epi32(detail::load_i32(y + 64 * j + 32 + 4 * t));
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          const __m256i bits = loadu256(x[g] + detail::kQ4_Kx8Qs + 32 * (8 * j + t));
          const __m256i lo = _mm256_and_si256(bits, m4);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
#if GENIEX_X86_VNNI
          // Row r's 4 products of the step straight into its int32 lane (one vpdpbusd instead
          // of maddubs + add): the same integer sums as the int16 pairs below, which never
          // saturate (8 steps x 2 x 15 x 127 < 2^15).
          plo[g] = _mm256_dpbusd_epi32(plo[g], lo, ylo);
          phi[g] = _mm256_dpbusd_epi32(phi[g], hi, yhi);
#else
          plo[g] = _mm256_add_epi16(plo[g], _mm256_maddubs_epi16(lo, ylo));
          phi[g] = _mm256_add_epi16(phi[g], _mm256_maddubs_epi16(hi, yhi));
#endif
        }
      }
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const __m256i sl = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
            reinterpret_cast<const __m128i*>(x[g] + detail::kQ4_Kx8Scales + 8 * (2 * j))));
        const __m256i sh = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
            reinterpret_cast<const __m128i*>(x[g] + detail::kQ4_Kx8Scales + 8 * (2 * j + 1))));
#if GENIEX_X86_VNNI
        st[g] = _mm256_add_epi32(st[g], _mm256_add_epi32(_mm256_mullo_epi32(plo[g], sl),
                                                         _mm256_mullo_epi32(phi[g], sh)));
#else
        const __m256i sl2 = _mm256_or_si256(sl, _mm256_slli_epi32(sl, 16));
        const __m256i sh2 = _mm256_or_si256(sh, _mm256_slli_epi32(sh, 16));
        st[g] = madd_acc(madd_acc(st[g], plo[g], sl2), phi[g], sh2);
#endif
      }
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m256 dw = _mm256_cvtph_ps(loadu128(x[g]));
      const __m256 dmin = _mm256_cvtph_ps(loadu128(x[g] + 16));
      __m256i mp = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m256i mn = _mm256_cvtepu8_epi16(loadu128(x[g] + detail::kQ4_Kx8Mins + 16 * p));
        mp = madd_acc(mp, mn, _mm256_set1_epi32(detail::load_i32(ds + 4 + 4 * p)));
      }
      acc[g] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dy), _mm256_cvtepi32_ps(st[g]), acc[g]);
      accm[g] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, dy), _mm256_cvtepi32_ps(mp), accm[g]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m256 v = _mm256_sub_ps(acc[g], accm[g]);
    if (rows[g] == 8) {
      _mm256_storeu_ps(out[g], v);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, v);
      for (int r = 0; r < rows[g]; ++r) out[g][r] = tmp[r];
    }
  }
}

GENIEX_X86_TARGET void q4_kx8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                                   size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * detail::kQ4_Kx8Block;
  if (nc == 1) {
    packed_gemv_lockstep(nr, gb, w, out,
                         [&]<int G>(const uint8_t* const* ws, float* const* os, const int* rs) {
                           q4_kx8_gemv_lockstep<G>(nsb, ws, a, os, rs);
                         });
    return;
  }
  packed_gemm_tiles<PackedTiling{.chunk_bytes = 32u << 10, .max_cols = kPackedColsQ4K}>(
      kPackedColsQ4K, gb, w, nr, a, a_stride, nc, out, out_stride,
      [&]<int NC>(const uint8_t* wg, const uint8_t* const* rows, float* o, int nrows,
                  const uint8_t* /*pf*/)
          GENIEX_X86_TARGET { q4_kx8_tile<NC>(nsb, wg, rows, o, out_stride, nrows); });
}

// Q6_Kx8: a piece (half n, sub-block parity h) at a time, read in memory order: per v, a qh
// chunk and two ql chunks give the 6-bit quants (q + 32) of 4 sub-blocks (i = 0..3), dotted
// into sums that start at the activation's -32 * Σ corrections; after the piece's 4 v, each sum
// is scaled by its rows' int8 sub-block scales (vpmulld) into the super-block sum.
template <int NC>
GENIEX_X86_TARGET inline void q6_kx8_tile(size_t nsb, const uint8_t* w, const uint8_t* const* a,
                                          float* out, size_t out_stride, int rows) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m3 = _mm256_set1_epi8(0x03);
  __m256 acc[NC];
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
  const size_t ds_off = nsb * detail::kQ8KxQs;
  for (size_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* x = w + sb * detail::kQ6_Kx8Block;
    const uint8_t* y[NC];
    const uint8_t* ds[NC];
    __m256i isum[NC];
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
      y[c] = a[c] + sb * detail::kQ8KxQs;
      ds[c] = a[c] + ds_off + sb * detail::kQ8K6Ds;
      isum[c] = _mm256_setzero_si256();
    }
    for (int piece = 0; piece < 4; ++piece) {
      const int nh = piece / 2, h = piece % 2;
      __m256i s[4][NC];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) {
          s[i][c] = _mm256_set1_epi32(detail::load_i32(ds[c] + 4 + 4 * (8 * nh + 2 * i + h)));
        }
      }
#pragma GCC unroll 4
      for (int v = 4 * h; v < 4 * h + 4; ++v) {
        const __m256i qh = loadu256(x + detail::q6_kx8_chunk(nh, v, 0));
        const __m256i qa = loadu256(x + detail::q6_kx8_chunk(nh, v, 1));
        const __m256i qb = loadu256(x + detail::q6_kx8_chunk(nh, v, 2));
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m256i ql = (i & 1) ? qb : qa;
          const __m256i lo = _mm256_and_si256(i < 2 ? ql : _mm256_srli_epi16(ql, 4), m4);
          const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * i), m3);
          const __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 4));
#pragma GCC unroll 8
          for (int c = 0; c < NC; ++c) {
            const __m256i av =
                _mm256_set1_epi32(detail::load_i32(y[c] + 128 * nh + 32 * i + 4 * v));
#if GENIEX_X86_VNNI
            s[i][c] = _mm256_dpbusd_epi32(s[i][c], q, av);
#else
            s[i][c] = _mm256_add_epi32(s[i][c], dot_u8_i8(q, av));
#endif
          }
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(
            x + detail::kQ6_Kx8Scales + 8 * (8 * nh + 2 * i + h))));
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) {
          isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(s[i][c], sc));
        }
      }
    }
    const __m256 dw = _mm256_cvtph_ps(loadu128(x));
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
      // One fma per super-block, as the row kernel (the rounding llama.cpp's greedy goldens
      // were matched with; see gemma_fidelity_test).
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(load_f32(ds[c])));
      acc[c] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum[c]), acc[c]);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    float* o = out + static_cast<size_t>(c) * out_stride;
    if (rows == 8) {
      _mm256_storeu_ps(o, acc[c]);
    } else {
      float tmp[8];
      _mm256_storeu_ps(tmp, acc[c]);
      for (int r = 0; r < rows; ++r) o[r] = tmp[r];
    }
  }
}

GENIEX_X86_TARGET void q6_kx8_gemm(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                                   size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * detail::kQ6_Kx8Block;
  packed_gemm_tiles<PackedTiling{.chunk_bytes = 32u << 10, .max_cols = kPackedColsK}>(
      kPackedColsK, gb, w, nr, a, a_stride, nc, out, out_stride,
      [&]<int NC>(const uint8_t* wg, const uint8_t* const* rows, float* o, int nrows,
                  const uint8_t* /*pf*/)
          GENIEX_X86_TARGET { q6_kx8_tile<NC>(nsb, wg, rows, o, out_stride, nrows); });
}

// Q8_0x8 / Q5_0x8 and packed_gemm_for_type().
#include "backends/cpu/kernels/repack_legacy_x86-inl.h"  // NOLINT(build/include)
