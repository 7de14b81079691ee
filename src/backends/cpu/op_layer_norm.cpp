// LayerNorm and the exact (erf) GELU of the SigLIP2 vision encoder on the CPU, bit-identical to
// graph::ref::layer_norm / ref::gelu_erf on every ISA level.
// * LayerNorm: the reference's two passes (Σ x, then Σ (x - mean)^2) are sequential double sums
//   (a float converts to double exactly, so only the order of the additions matters, and it is
//   kept), but four rows' sums run as independent chains: the reference's single chain is bound
//   by the latency of a double add. The scaling is the reference's row function.
// * GeluErf: the reference's 0.5 x erfc(-x / sqrt(2)) in double per element (libm's erfc, ~40
//   ns), split over the pool in chunks by the caller; no polynomial approximation, so there is
//   no ISA-specific path to keep in step.
#include <algorithm>

#include "backends/cpu/cpu_ops.h"
#include "graph/ref_ops.h"

namespace geniex::backends::cpu {
namespace {

constexpr int64_t kRowsPerTask = 4;

}  // namespace

void layer_norm_rows(ThreadPool& pool, const float* x, const float* w, const float* b, int64_t n,
                     int64_t rows, float eps, float* y) {
  if (n <= 0 || rows <= 0) return;
  const int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  const auto dn = static_cast<double>(n);
  pool.parallel_for(tasks, [&](int64_t t, int) {
    const int64_t r0 = t * kRowsPerTask;
    const int64_t nr = std::min(kRowsPerTask, rows - r0);
    const float* xr = x + r0 * n;
    double mean[kRowsPerTask] = {}, ss[kRowsPerTask] = {};
    if (nr == kRowsPerTask) {
      const float *p0 = xr, *p1 = xr + n, *p2 = xr + 2 * n, *p3 = xr + 3 * n;
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        s0 += p0[i];
        s1 += p1[i];
        s2 += p2[i];
        s3 += p3[i];
      }
      const double m0 = s0 / dn, m1 = s1 / dn, m2 = s2 / dn, m3 = s3 / dn;
      double q0 = 0.0, q1 = 0.0, q2 = 0.0, q3 = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const double d0 = p0[i] - m0, d1 = p1[i] - m1, d2 = p2[i] - m2, d3 = p3[i] - m3;
        q0 += d0 * d0;
        q1 += d1 * d1;
        q2 += d2 * d2;
        q3 += d3 * d3;
      }
      mean[0] = m0, mean[1] = m1, mean[2] = m2, mean[3] = m3;
      ss[0] = q0, ss[1] = q1, ss[2] = q2, ss[3] = q3;
    } else {
      for (int64_t r = 0; r < nr; ++r) {
        mean[r] = graph::ref::layer_norm_sum(xr + r * n, n) / dn;
        ss[r] = graph::ref::layer_norm_sum_sq_dev(xr + r * n, n, mean[r]);
      }
    }
    for (int64_t r = 0; r < nr; ++r) {
      graph::ref::layer_norm_row(xr + r * n, w, b, n, mean[r], ss[r], eps, y + (r0 + r) * n);
    }
  });
}

void gelu_erf_rows(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = graph::ref::gelu_erf(x[i]);
}

}  // namespace geniex::backends::cpu
