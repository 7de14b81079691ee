#include "backends/cpu/kernels/gemv_tuning.h"

#include <algorithm>

#include "backends/cpu/kernels/isa.h"

namespace geniex::cpu {

namespace {

// x86 with AVX-512 VNNI: one hardware-prefetched linear stream (measured on Zen 4).
bool avx512_generation() {
#if defined(__x86_64__)
  return cpu_isa() == Isa::kAvx512Vnni;
#else
  return false;
#endif
}

}  // namespace

int default_gemv_streams() {
#if defined(__x86_64__)
  return avx512_generation() ? 1 : 2;  // 2 beat 1 and 4 on Zen 3, 1 beat 2 on Zen 4
#else
  return 1;  // Arm: unmeasured on hardware, one linear pass
#endif
}

size_t default_gemv_prefetch_bytes() { return avx512_generation() ? 0 : 4096; }

namespace detail {
std::atomic<size_t> g_gemv_prefetch_bytes{default_gemv_prefetch_bytes()};
std::atomic<int> g_gemv_streams{default_gemv_streams()};
}  // namespace detail

void set_gemv_prefetch_bytes(size_t bytes) {
  detail::g_gemv_prefetch_bytes.store(bytes, std::memory_order_relaxed);
}

void set_gemv_streams(int n) {
  detail::g_gemv_streams.store(std::clamp(n, 1, kMaxGemvStreams), std::memory_order_relaxed);
}

}  // namespace geniex::cpu
