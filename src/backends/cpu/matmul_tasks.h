// How the CPU matmuls (op_matmul.cpp: row kernels, op_matmul_packed.cpp: packed kernels) split
// their output over the thread pool: runs of weight rows (or packed groups) times tiles of
// activation rows, tile-major, so neighbouring tasks share one activation tile in L2.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/thread_pool.h"

namespace geniex::backends::cpu {

/// Activation rows per tile: a tile of quantized activations stays in L2.
inline constexpr int64_t kMatmulColsPerTile = 64;

/// Runs fn(u0, nu, c0, nc) over the pool for every task: units [u0, u0 + nu) of `units` weight
/// units (rows or packed groups), `per_task` per task, times activation rows [c0, c0 + nc) of
/// `m`, `cols_per_tile` per tile.
template <typename Fn>
void for_each_matmul_task(ThreadPool& pool, int64_t units, int64_t per_task, int64_t m,
                          const Fn& fn, int64_t cols_per_tile = kMatmulColsPerTile) {
  const int64_t row_tasks = (units + per_task - 1) / per_task;
  const int64_t col_tiles = (m + cols_per_tile - 1) / cols_per_tile;
  pool.parallel_for(row_tasks * col_tiles, [&](int64_t task, int) {
    const int64_t ct = task / row_tasks;  // tile-major: neighbours share the activation tile
    const int64_t u0 = (task % row_tasks) * per_task;
    const int64_t c0 = ct * cols_per_tile;
    fn(u0, std::min(per_task, units - u0), c0, std::min(cols_per_tile, m - c0));
  });
}

}  // namespace geniex::backends::cpu
