// RoPE on the CPU: the reference formula (angles, sin and cos in double; see graph/ref_ops.cpp),
// bit-identical to it, with the base^(-2i/n) powers computed once per call instead of once per
// token, and tokens spread over the pool.
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"

namespace geniex::backends::cpu {

Status rope(ThreadPool& pool, const float* x, int64_t head_dim, int64_t n_head, int64_t n_tokens,
            std::span<const int32_t> pos, const graph::RopeParams& p,
            std::span<const float> freq_factors, float* y) {
  const int64_t n_dims = p.n_dims == 0 ? head_dim : p.n_dims;
  if (static_cast<int64_t>(pos.size()) != n_tokens || n_dims <= 0 || n_dims % 2 != 0 ||
      n_dims > head_dim) {
    return invalid_argument("rope: pos has " + std::to_string(pos.size()) + " entries for " +
                            std::to_string(n_tokens) + " tokens, n_dims " + std::to_string(n_dims) +
                            ", head_dim " + std::to_string(head_dim));
  }
  const int64_t half = n_dims / 2;
  if (!freq_factors.empty() && static_cast<int64_t>(freq_factors.size()) != half) {
    return invalid_argument("rope: freq_factors must have n_dims/2 entries");
  }
  std::vector<double> powers(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    powers[static_cast<size_t>(i)] = std::pow(
        static_cast<double>(p.base), -2.0 * static_cast<double>(i) / static_cast<double>(n_dims));
  }
  const bool neox = p.mode == graph::RopeMode::kNeox;
  pool.parallel_for(n_tokens, [&](int64_t t, int) {
    thread_local std::vector<double> cs, sn;
    cs.resize(static_cast<size_t>(half));
    sn.resize(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
      double theta = static_cast<double>(pos[static_cast<size_t>(t)]) * p.freq_scale *
                     powers[static_cast<size_t>(i)];
      if (!freq_factors.empty()) theta /= static_cast<double>(freq_factors[static_cast<size_t>(i)]);
      cs[static_cast<size_t>(i)] = std::cos(theta);
      sn[static_cast<size_t>(i)] = std::sin(theta);
    }
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t base = (t * n_head + h) * head_dim;
      const float* xr = x + base;
      float* yr = y + base;
      for (int64_t i = n_dims; i < head_dim; ++i) yr[i] = xr[i];
      for (int64_t i = 0; i < half; ++i) {
        const int64_t i0 = neox ? i : 2 * i;
        const int64_t i1 = neox ? i + half : 2 * i + 1;
        const double a = xr[i0], b = xr[i1];
        yr[i0] =
            static_cast<float>(a * cs[static_cast<size_t>(i)] - b * sn[static_cast<size_t>(i)]);
        yr[i1] =
            static_cast<float>(a * sn[static_cast<size_t>(i)] + b * cs[static_cast<size_t>(i)]);
      }
    }
  });
  return {};
}

}  // namespace geniex::backends::cpu
