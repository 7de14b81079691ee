// RoPE on the CPU: the reference formula (angles in double), split by tokens over the pool.
#include "backends/cpu/cpu_ops.h"
#include "graph/ref_ops.h"

namespace geniex::backends::cpu {

Status rope(ThreadPool& pool, const float* x, int64_t head_dim, int64_t n_head, int64_t n_tokens,
            std::span<const int32_t> pos, const graph::RopeParams& p,
            std::span<const float> freq_factors, float* y) {
  if (static_cast<int64_t>(pos.size()) != n_tokens) {
    return invalid_argument("rope: pos has " + std::to_string(pos.size()) + " entries, expected " +
                            std::to_string(n_tokens));
  }
  constexpr int64_t kTokensPerTask = 8;
  const int64_t tasks = (n_tokens + kTokensPerTask - 1) / kTokensPerTask;
  const int64_t per_token = head_dim * n_head;
  std::vector<Status> errors(static_cast<size_t>(tasks));
  pool.parallel_for(tasks, [&](int64_t task, int) {
    const int64_t t0 = task * kTokensPerTask;
    const int64_t nt = std::min(kTokensPerTask, n_tokens - t0);
    const auto count = static_cast<size_t>(nt * per_token);
    errors[static_cast<size_t>(task)] =
        graph::ref::rope(std::span<const float>(x + t0 * per_token, count), head_dim, n_head, nt,
                         pos.subspan(static_cast<size_t>(t0), static_cast<size_t>(nt)), p,
                         freq_factors, std::span<float>(y + t0 * per_token, count));
  });
  for (auto& s : errors) {
    if (!s.ok()) return s;
  }
  return {};
}

}  // namespace geniex::backends::cpu
