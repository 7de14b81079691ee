// Per-ISA kernel tables behind dot_kernels() and the shared row-tiling driver. Internal to
// src/backends/cpu/kernels.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/gemv_tuning.h"
#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/vec_dot.h"

namespace geniex::cpu::detail {

// Each returns nullptr when that ISA has no kernel for the type (the dispatcher falls back).
GemmFn scalar_gemm(GgmlType t);
QuantizeActFn scalar_quantize_act(GgmlType act_type);
#if defined(GENIEX_CPU_X86)
QuantizeActFn sse4_quantize_act(GgmlType act_type);
GemmFn sse4_gemm(GgmlType t);
QuantizeActFn avx2_quantize_act(GgmlType act_type);
GemmFn avx2_gemm(GgmlType t);
GemmFn avx512_gemm(GgmlType t);
GemmFn avx512vnni_gemm(GgmlType t);
#endif
#if defined(GENIEX_CPU_ARM64)
QuantizeActFn neon_quantize_act(GgmlType act_type);
GemmFn neon_gemm(GgmlType t);
GemmFn neon_dotprod_gemm(GgmlType t);
GemmFn neon_i8mm_gemm(GgmlType t);
#endif

// Software prefetch for single-row passes (GEMVs: decode with one sequence) over weights that
// stream from memory. With the hardware prefetcher alone, compute and memory barely overlap: one
// Zen 3 core ran the packed Q4_K GEMV at ~6 GB/s from memory (21 GB/s from L3) while its plain
// read loop gets ~10. Each block's lines default_gemv_prefetch_bytes() ahead are requested into L1
// as the kernel reaches it (bench_matmul q4_k 65536 x 2048, one thread: 10.1 -> 8.3 ms median;
// decode tok/s +8..23 % on the 1B shapes, +15..24 % on Gemma 3 270M and SmolLM at one thread; 2048
// to 8192 bytes ahead measured alike). x86 only: the Arm cores are unmeasured (no hardware here).
// Zen 4 (AVX-512 VNNI) decodes faster without it (gemv_tuning.h's defaults).
// The distance is set_gemv_prefetch_bytes()'s (gemv_tuning.h; CpuTuning::gemv_prefetch_bytes),
// 0 turns it off (A/B benchmarks).
inline void stream_prefetch([[maybe_unused]] const uint8_t* p, [[maybe_unused]] size_t bytes) {
#if defined(__x86_64__)
  const size_t d = gemv_prefetch_bytes();
  if (d == 0) return;
  // A prefetch never faults, so lines past the end of the matrix are harmless.
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + d + o, 0, 3);
#endif
}

// GEMVs read their weights as several concurrent streams: one core reads ~16 GB/s from one linear
// stream and ~20-22 from 2-4 streams interleaved block by block (Zen 3; the hardware prefetcher
// keeps more lines in flight), while 4 KiB turns or software prefetch alone gain nothing.
// How many is set_gemv_streams()'s (gemv_tuning.h; CpuTuning::gemv_streams: 1 = one linear
// pass, at most kMaxGemvStreams; default 2 on x86 before AVX-512 VNNI, 1 elsewhere).
using ::geniex::cpu::gemv_streams;
using ::geniex::cpu::kMaxGemvStreams;

// Splits `count` units (weight groups or rows) into `streams` contiguous parts and calls
// fn(n, units) with the i-th unit of each part (n <= streams: the last parts may be shorter), so
// a kernel that walks those units in lockstep reads the parts as concurrent streams. Every unit is
// passed exactly once.
template <typename F>
inline void gemv_lockstep(int64_t count, int streams, const F& fn) {
  if (count <= 0) return;
  const int64_t parts = std::clamp<int64_t>(streams, 1, std::min<int64_t>(count, kMaxGemvStreams));
  const int64_t len = (count + parts - 1) / parts;
  int64_t units[kMaxGemvStreams];
  for (int64_t i = 0; i < len; ++i) {
    int n = 0;
    for (int64_t p = 0; p < parts; ++p) {
      const int64_t u = p * len + i;
      if (u < count) units[n++] = u;
    }
    fn(n, units);
  }
}

inline constexpr int kMaxTileCols = 4;  // activation rows per pass over a weight row
inline constexpr int kMaxTileRows = 4;  // weight rows per pass (gemm_rows)

// Drives a tile kernel over the whole output. K::run<NC>(nb, w_row, a_rows, res) computes the
// dots of one weight row with NC <= kMaxTileCols activation rows (nb blocks each). Weight rows
// are taken in chunks of about 16 KiB so a chunk stays in L1/L2 while every group of activation
// rows streams over it: each weight block is loaded (and unpacked) once per NC activation rows.
// GEMVs (nc = 1) prefetch each weight row gemv_prefetch_bytes() bytes ahead at its start, unless K
// declares kPrefetchesBlocks and does it block by block itself (the x86 K-quant kernels: a
// row-start burst of ~27 prefetches stalled on full miss buffers; per block, 1B Q4_K_M decode
// at one thread ran +8.6 % with the Q6_K kernel, 6 of 6 alternating pairs, and +8.5 % more with
// the Q4_K row kernel with repacking off, 5 of 5).
template <typename K>
inline void gemm_tiles(int64_t n, const uint8_t* w, size_t w_stride, int64_t nr, const uint8_t* a,
                       size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(n / K::kBlock);
  if (nc == 1 && nr >= 2 && gemv_streams() >= 2) {
    // GEMV: rows from gemv_streams() parts of the matrix in turn (each its own memory stream).
    gemv_lockstep(nr, gemv_streams(), [&](int cnt, const int64_t* rows_at) {
      if constexpr (requires { &K::template run_gemv_rows<2>; }) {
        // The rows of every stream in lockstep (the same bits as run<1> row by row).
        const uint8_t* ws[kMaxGemvStreams];
        float res[kMaxGemvStreams];
        for (int s = 0; s < cnt; ++s) ws[s] = w + static_cast<size_t>(rows_at[s]) * w_stride;
        switch (cnt) {
          case 4: K::template run_gemv_rows<4>(nb, ws, a, res); break;
          case 3: K::template run_gemv_rows<3>(nb, ws, a, res); break;
          case 2: K::template run_gemv_rows<2>(nb, ws, a, res); break;
          default: K::template run_gemv_rows<1>(nb, ws, a, res); break;
        }
        for (int s = 0; s < cnt; ++s) out[rows_at[s]] = res[s];
        return;
      }
      for (int s = 0; s < cnt; ++s) {
        const uint8_t* wr = w + static_cast<size_t>(rows_at[s]) * w_stride;
        if constexpr (!requires { K::kPrefetchesBlocks; }) stream_prefetch(wr, nb * K::kBlockBytes);
        float res[kMaxTileCols] = {};
        K::template run<1>(nb, wr, &a, res);
        out[rows_at[s]] = res[0];
      }
    });
    return;
  }
  const int64_t chunk = std::max<int64_t>(
      1, static_cast<int64_t>((16u << 10) / std::max<size_t>(1, nb * K::kBlockBytes)));
  for (int64_t i0 = 0; i0 < nr; i0 += chunk) {
    const int64_t i1 = std::min(nr, i0 + chunk);
    for (int64_t j0 = 0; j0 < nc; j0 += kMaxTileCols) {
      const int m = static_cast<int>(std::min<int64_t>(kMaxTileCols, nc - j0));
      const uint8_t* rows[kMaxTileCols];
      for (int c = 0; c < m; ++c) rows[c] = a + static_cast<size_t>(j0 + c) * a_stride;
      float* o = out + static_cast<size_t>(j0) * out_stride;
      for (int64_t i = i0; i < i1; ++i) {
        const uint8_t* wr = w + static_cast<size_t>(i) * w_stride;
        if constexpr (!requires { K::kPrefetchesBlocks; }) {
          if (nc == 1) stream_prefetch(wr, nb * K::kBlockBytes);
        }
        float res[kMaxTileCols] = {};
        switch (m) {
          case 4: K::template run<4>(nb, wr, rows, res); break;
          case 3: K::template run<3>(nb, wr, rows, res); break;
          case 2: K::template run<2>(nb, wr, rows, res); break;
          default: K::template run<1>(nb, wr, rows, res); break;
        }
        for (int c = 0; c < m; ++c) o[static_cast<size_t>(c) * out_stride + i] = res[c];
      }
    }
  }
}

// Calls K::run<NR, NC> for runtime nr <= kMaxTileRows, nc <= kMaxTileCols.
template <typename K, int NR>
inline void run_rows_nc(int nc, size_t nb, const uint8_t* w, size_t ws, const uint8_t* const* a,
                        float* res) {
  switch (nc) {
    case 4: K::template run<NR, 4>(nb, w, ws, a, res); break;
    case 3: K::template run<NR, 3>(nb, w, ws, a, res); break;
    case 2: K::template run<NR, 2>(nb, w, ws, a, res); break;
    default: K::template run<NR, 1>(nb, w, ws, a, res); break;
  }
}

inline constexpr size_t kSumBlocks = 512;  // activation blocks per K chunk of a GEMV

// Like gemm_tiles for kernels that take up to kMaxTileRows weight rows per pass:
// K::run<NR, NC>(nb, w, w_stride, a_rows, res) sets res[c * kMaxTileRows + r] to the dot of
// weight row r (at w + r * w_stride) with activation row c; several weight rows per pass let one
// activation load (and scale conversion) serve them all. For nc = 1,
// K::run_gemv(nb, w_row, a_row, sums) returns one dot, rows taken one at a time from
// gemv_streams() parts of the matrix in turn. When K::kActSums, sums[ib] is the
// sum of activation block ib (K::act_sums), computed once per call and K chunk of at most
// kSumBlocks blocks (so the buffer lives on the stack); chunk results are added up.
template <typename K>
inline void gemm_rows(int64_t n, const uint8_t* w, size_t w_stride, int64_t nr, const uint8_t* a,
                      size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(n / K::kBlock);
  // With batch_invariant() the GEMV goes through the GEMM tiles below: the same arithmetic per
  // output element for any nc (the single-stream path is faster but sums in another order).
  if (nc == 1 && !batch_invariant()) {
    int32_t sums[K::kActSums ? kSumBlocks : 1] = {};
    const size_t kc = K::kActSums ? kSumBlocks : std::max<size_t>(1, nb);
    for (size_t k0 = 0; k0 < nb || k0 == 0; k0 += kc) {
      const size_t nbk = std::min(kc, nb - k0);
      const uint8_t* ak = a + k0 * K::kActBytes;
      if constexpr (K::kActSums) K::act_sums(nbk, ak, sums);
      // Rows from gemv_streams() parts of the matrix in turn (each its own memory stream).
      gemv_lockstep(nr, gemv_streams(), [&](int cnt, const int64_t* rows_at) {
        for (int s = 0; s < cnt; ++s) {
          const int64_t i = rows_at[s];
          const uint8_t* wr = w + static_cast<size_t>(i) * w_stride + k0 * K::kBlockBytes;
          stream_prefetch(wr, nbk * K::kBlockBytes);
          const float v = K::run_gemv(nbk, wr, ak, sums);
          out[i] = k0 == 0 ? v : out[i] + v;
        }
      });
    }
    return;
  }
  int64_t chunk = static_cast<int64_t>((16u << 10) / std::max<size_t>(1, nb * K::kBlockBytes));
  chunk = std::max<int64_t>(kMaxTileRows, chunk / kMaxTileRows * kMaxTileRows);
  for (int64_t i0 = 0; i0 < nr; i0 += chunk) {
    const int64_t i1 = std::min(nr, i0 + chunk);
    for (int64_t j0 = 0; j0 < nc; j0 += kMaxTileCols) {
      const int m = static_cast<int>(std::min<int64_t>(kMaxTileCols, nc - j0));
      const uint8_t* rows[kMaxTileCols];
      for (int c = 0; c < m; ++c) rows[c] = a + static_cast<size_t>(j0 + c) * a_stride;
      float* o = out + static_cast<size_t>(j0) * out_stride;
      for (int64_t i = i0; i < i1; i += kMaxTileRows) {
        const int nrr = static_cast<int>(std::min<int64_t>(kMaxTileRows, i1 - i));
        const uint8_t* wr = w + static_cast<size_t>(i) * w_stride;
        float res[kMaxTileRows * kMaxTileCols];
        switch (nrr) {
          case 4: run_rows_nc<K, 4>(m, nb, wr, w_stride, rows, res); break;
          case 3: run_rows_nc<K, 3>(m, nb, wr, w_stride, rows, res); break;
          case 2: run_rows_nc<K, 2>(m, nb, wr, w_stride, rows, res); break;
          default: run_rows_nc<K, 1>(m, nb, wr, w_stride, rows, res); break;
        }
        for (int c = 0; c < m; ++c) {
          for (int r = 0; r < nrr; ++r) {
            o[static_cast<size_t>(c) * out_stride + static_cast<size_t>(i + r)] =
                res[c * kMaxTileRows + r];
          }
        }
      }
    }
  }
}

}  // namespace geniex::cpu::detail
