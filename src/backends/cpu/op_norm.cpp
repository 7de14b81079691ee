// RMSNorm over rows, bit-identical to graph::ref::rms_norm: every row's sum of squares is the
// reference's sequential double sum (products of floats are exact in double, so only the order
// of the additions matters, and it is kept), but four rows' sums run as independent chains. The
// reference's single chain is bound by the latency of a double add, one element per ~3 cycles.
#include <algorithm>

#include "backends/cpu/cpu_ops.h"
#include "graph/ref_ops.h"

namespace geniex::backends::cpu {
namespace {

constexpr int64_t kRowsPerTask = 4;

}  // namespace

void rms_norm_rows(ThreadPool& pool, const float* x, const float* w, int64_t n, int64_t rows,
                   float eps, float* y) {
  if (n <= 0 || rows <= 0) return;
  const int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(tasks, [&](int64_t t, int) {
    const int64_t r0 = t * kRowsPerTask;
    const int64_t nr = std::min(kRowsPerTask, rows - r0);
    const float* xr = x + r0 * n;
    double ss[kRowsPerTask] = {};
    if (nr == kRowsPerTask) {
      const float *a = xr, *b = xr + n, *c = xr + 2 * n, *d = xr + 3 * n;
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        s0 += static_cast<double>(a[i]) * a[i];
        s1 += static_cast<double>(b[i]) * b[i];
        s2 += static_cast<double>(c[i]) * c[i];
        s3 += static_cast<double>(d[i]) * d[i];
      }
      ss[0] = s0, ss[1] = s1, ss[2] = s2, ss[3] = s3;
    } else {
      for (int64_t r = 0; r < nr; ++r) ss[r] = graph::ref::rms_sum_squares(xr + r * n, n);
    }
    for (int64_t r = 0; r < nr; ++r) {
      graph::ref::rms_norm_row(xr + r * n, w, n, ss[r], eps, y + (r0 + r) * n);
    }
  });
}

}  // namespace geniex::backends::cpu
