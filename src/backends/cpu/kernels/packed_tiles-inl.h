// The outer loop of the packed GEMMs (repack.h), written once for every weight type and SIMD
// level, as packed_gemv_lockstep is for their GEMVs. Included inside each per-ISA namespace by
// repack_x86-inl.h and repack_neon-inl.h with GENIEX_PACKED_TARGET defined as that ISA's target
// attribute, so the driver, the column dispatch and the tiles compile for the same target and
// inline into one function per kernel, as the five hand-written copies did (a driver compiled
// for the baseline ISA left the tiles out of line: Q6_Kx8 GEMMs ran ~1.5x slower).
// NOLINT(build/header_guard): included once per target on purpose.
/// How packed_gemm_tiles walks a packed GEMM (a template argument: the loop is specialized per
/// kernel, as the hand-written copies were).
struct PackedTiling {
  /// Weight groups are taken in chunks of about this many bytes (at least one group), so a chunk
  /// stays in cache while every tile of activation rows streams over it.
  size_t chunk_bytes = 32u << 10;
  /// Most activation rows per tile: the tile kernel is instantiated for 1 .. max_cols.
  int max_cols = 1;
  /// The last tile over a chunk is given, per group, the same group of the next chunk to
  /// prefetch (null otherwise, and always null when false).
  bool prefetch_next_chunk = false;
};

/// tile.template operator()<NC>(args...) with NC = m, for 1 <= m <= N (m < 1 gives NC = 1).
template <int N, typename Tile, typename... Args>
GENIEX_PACKED_TARGET inline void run_packed_tile(int m, const Tile& tile, Args... args) {
  if constexpr (N > 1) {
    if (m < N) {
      run_packed_tile<N - 1>(m, tile, args...);
      return;
    }
  }
  tile.template operator()<N>(args...);
}

/// Drives a packed tile kernel over the whole output of a packed GEMM: `nr` weight rows in groups
/// of kPackRows (group g at w + g * gb) times `nc` prepared activation rows (row j at
/// a + j * a_stride), out[j * out_stride + i] = dot(weight row i, activation row j). Groups go in
/// chunks (kTiling.chunk_bytes); within a chunk, tile by tile of up to `cols_per_tile` (<=
/// kTiling.max_cols) activation rows, and within a tile group by group:
///   tile.template operator()<NC>(wg, rows, o, nrows, pf)
/// computes group wg (nrows <= kPackRows real rows) against the NC activation rows `rows` into
/// o[c * out_stride + r]; pf is the group to prefetch (kTiling.prefetch_next_chunk) or null.
/// `tile` is a lambda with the kernel's target attribute ([&]<int NC>(...) GENIEX_X86_TARGET
/// {...}): without it, it would be compiled for the baseline ISA and could not inline its tile.
template <PackedTiling kTiling, typename Tile>
GENIEX_PACKED_TARGET inline void packed_gemm_tiles(int cols_per_tile, size_t gb, const uint8_t* w,
                                                   int64_t nr, const uint8_t* a, size_t a_stride,
                                                   int64_t nc, float* out, size_t out_stride,
                                                   const Tile& tile) {
  constexpr int MaxCols = kTiling.max_cols;
  const int64_t ngroups = (nr + kPackRows - 1) / kPackRows;
  const int64_t chunk =
      std::max<int64_t>(1, static_cast<int64_t>(kTiling.chunk_bytes / std::max<size_t>(1, gb)));
  const int64_t cols = std::clamp(cols_per_tile, 1, MaxCols);
  for (int64_t g0 = 0; g0 < ngroups; g0 += chunk) {
    const int64_t g1 = std::min(ngroups, g0 + chunk);
    for (int64_t c0 = 0; c0 < nc; c0 += cols) {
      const int m = static_cast<int>(std::min<int64_t>(cols, nc - c0));
      const uint8_t* rows[MaxCols];
      for (int c = 0; c < m; ++c) rows[c] = a + static_cast<size_t>(c0 + c) * a_stride;
      const bool last_tile = c0 + cols >= nc;
      for (int64_t g = g0; g < g1; ++g) {
        const int nrows = static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows));
        const uint8_t* wg = w + static_cast<size_t>(g) * gb;
        float* o = out + static_cast<size_t>(c0) * out_stride + static_cast<size_t>(g * kPackRows);
        const uint8_t* pf = kTiling.prefetch_next_chunk && last_tile && g + chunk < ngroups
                                ? wg + static_cast<size_t>(chunk) * gb
                                : nullptr;
        run_packed_tile<MaxCols>(m, tile, wg, static_cast<const uint8_t* const*>(rows), o, nrows,
                                 pf);
      }
    }
  }
}
