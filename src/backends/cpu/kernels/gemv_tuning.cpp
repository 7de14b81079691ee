#include "backends/cpu/kernels/gemv_tuning.h"

#include <algorithm>

namespace geniex::cpu {

int default_gemv_streams() {
#if defined(__x86_64__)
  return 2;  // measured: 2 beat 1 and 4 on Zen 3 (docs/performance.md)
#else
  return 1;  // Arm: unmeasured on hardware, one linear pass
#endif
}

namespace detail {
std::atomic<size_t> g_gemv_prefetch_bytes{kDefaultGemvPrefetchBytes};
std::atomic<int> g_gemv_streams{default_gemv_streams()};
}  // namespace detail

void set_gemv_prefetch_bytes(size_t bytes) {
  detail::g_gemv_prefetch_bytes.store(bytes, std::memory_order_relaxed);
}

void set_gemv_streams(int n) {
  detail::g_gemv_streams.store(std::clamp(n, 1, kMaxGemvStreams), std::memory_order_relaxed);
}

}  // namespace geniex::cpu
