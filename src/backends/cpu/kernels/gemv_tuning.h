// Process-wide tuning of the single-row (GEMV) matmul kernels: A/B knobs whose defaults were
// measured (docs/performance.md). Set through CpuBackendOptions (ModelBuilder::with_tuning) or by
// benchmarks; the kernels are shared by every backend in the process, so the last setting wins.
#pragma once

#include <atomic>
#include <cstddef>

namespace geniex::cpu {

/// Most concurrent weight streams a GEMV reads.
inline constexpr int kMaxGemvStreams = 4;

// The defaults depend on the CPU, measured per generation (docs/performance.md), with the best
// ISA the CPU has (cpu_isa(), whatever cap is set) standing for its generation: on x86 with
// AVX-512 VNNI (measured on AMD Zen 4) one linear stream and the hardware prefetcher alone
// decode 9-18 % faster at one thread than 2 streams with software prefetch, which the AVX2
// generation (measured on Zen 3) needs. Intel's AVX-512 VNNI parts and Arm are unmeasured.

/// Concurrent weight streams a GEMV reads by default: 2 on x86 without AVX-512 VNNI, else 1.
int default_gemv_streams();
/// Bytes ahead of each weight block that a GEMV prefetches by default (x86; see
/// vec_dot_internal.h's stream_prefetch): 4096, or 0 (off) on x86 with AVX-512 VNNI.
size_t default_gemv_prefetch_bytes();

/// Sets the GEMV prefetch distance in bytes (0: no software prefetch).
void set_gemv_prefetch_bytes(size_t bytes);
/// Sets the GEMV weight streams, clamped to [1, kMaxGemvStreams].
void set_gemv_streams(int n);

namespace detail {
extern std::atomic<size_t> g_gemv_prefetch_bytes;
extern std::atomic<int> g_gemv_streams;
}  // namespace detail

/// The current GEMV prefetch distance (default_gemv_prefetch_bytes() unless set).
inline size_t gemv_prefetch_bytes() {
  return detail::g_gemv_prefetch_bytes.load(std::memory_order_relaxed);
}
/// The current number of GEMV weight streams (default_gemv_streams() unless set).
inline int gemv_streams() { return detail::g_gemv_streams.load(std::memory_order_relaxed); }

}  // namespace geniex::cpu
