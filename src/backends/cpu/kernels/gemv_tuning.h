// Process-wide tuning of the single-row (GEMV) matmul kernels: A/B knobs whose defaults were
// measured (docs/performance.md). Set through CpuBackendOptions (ModelBuilder::with_tuning) or by
// benchmarks; the kernels are shared by every backend in the process, so the last setting wins.
#pragma once

#include <atomic>
#include <cstddef>

namespace geniex::cpu {

/// Bytes ahead of each weight block that a GEMV prefetches by default (x86; see
/// vec_dot_internal.h's stream_prefetch).
inline constexpr size_t kDefaultGemvPrefetchBytes = 4096;
/// Most concurrent weight streams a GEMV reads.
inline constexpr int kMaxGemvStreams = 4;
/// Concurrent weight streams a GEMV reads by default: 2 on x86 (measured faster than 1 and 4 on
/// Zen 3), 1 elsewhere (unmeasured on Arm hardware: one linear pass).
int default_gemv_streams();

/// Sets the GEMV prefetch distance in bytes (0: no software prefetch).
void set_gemv_prefetch_bytes(size_t bytes);
/// Sets the GEMV weight streams, clamped to [1, kMaxGemvStreams].
void set_gemv_streams(int n);

namespace detail {
extern std::atomic<size_t> g_gemv_prefetch_bytes;
extern std::atomic<int> g_gemv_streams;
}  // namespace detail

/// The current GEMV prefetch distance (kDefaultGemvPrefetchBytes unless set).
inline size_t gemv_prefetch_bytes() {
  return detail::g_gemv_prefetch_bytes.load(std::memory_order_relaxed);
}
/// The current number of GEMV weight streams (default_gemv_streams() unless set).
inline int gemv_streams() { return detail::g_gemv_streams.load(std::memory_order_relaxed); }

}  // namespace geniex::cpu
