// Per-ISA kernel tables behind dot_kernels() and the shared row-tiling driver. Internal to
// src/backends/cpu/kernels.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/vec_dot.h"

namespace geniex::cpu::detail {

// Each returns nullptr when that ISA has no kernel for the type (the dispatcher falls back).
GemmFn scalar_gemm(GgmlType t);
QuantizeActFn scalar_quantize_act(GgmlType act_type);
#if defined(GENIEX_CPU_X86)
GemmFn avx2_gemm(GgmlType t);
GemmFn avx512_gemm(GgmlType t);
GemmFn avx512vnni_gemm(GgmlType t);
#endif
#if defined(GENIEX_CPU_ARM64)
GemmFn neon_gemm(GgmlType t);
GemmFn neon_dotprod_gemm(GgmlType t);
#endif

inline constexpr int kMaxTileCols = 4;  // activation rows per pass over a weight row

// Drives a tile kernel over the whole output. K::run<NC>(nb, w_row, a_rows, res) computes the
// dots of one weight row with NC <= kMaxTileCols activation rows (nb blocks each). Weight rows
// are taken in chunks of about 16 KiB so a chunk stays in L1/L2 while every group of activation
// rows streams over it: each weight block is loaded (and unpacked) once per NC activation rows.
template <typename K>
inline void gemm_tiles(int64_t n, const uint8_t* w, size_t w_stride, int64_t nr, const uint8_t* a,
                       size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(n / K::kBlock);
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

}  // namespace geniex::cpu::detail
