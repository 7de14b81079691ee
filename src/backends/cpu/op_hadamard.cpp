// The Walsh-Hadamard rotation (graph op kHadamard) on the CPU, in float and in ggml's operation
// order (ggml_compute_forward_fwht): each block is first scaled by 1 / sqrtf(n), then goes
// through log2(n) butterfly passes (u + v, u - v) with the pair distance doubling. Every element
// sees the same additions whichever the vector width, so llama.cpp's SIMD and scalar paths, and
// this loop (which the compiler vectorizes), give the same bits.
#include <cmath>

#include "backends/cpu/cpu_ops.h"

namespace geniex::backends::cpu {

void hadamard_block(const float* x, int64_t n, float* y) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] * scale;
  for (int64_t len = 1; len < n; len <<= 1) {
    for (int64_t i = 0; i < n; i += 2 * len) {
      float* a = y + i;
      float* b = y + i + len;
      for (int64_t j = 0; j < len; ++j) {
        const float u = a[j], v = b[j];
        a[j] = u + v;
        b[j] = u - v;
      }
    }
  }
}

void hadamard(ThreadPool& pool, const float* x, int64_t n, int64_t count, float* y) {
  const int64_t blocks = count / n;
  const int64_t per_task = std::max<int64_t>(1, 16384 / n);
  pool.parallel_for((blocks + per_task - 1) / per_task, [&](int64_t t, int) {
    const int64_t end = std::min(blocks, (t + 1) * per_task);
    for (int64_t b = t * per_task; b < end; ++b) hadamard_block(x + b * n, n, y + b * n);
  });
}

}  // namespace geniex::backends::cpu
