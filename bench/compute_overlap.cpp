// How much of a memory stream's bandwidth survives when each byte also costs compute: the
// question behind "decode at >= 85 % of the bandwidth bound" (issue 5). A decode GEMV reads every
// weight once and does a fixed amount of integer work per byte; if the core overlapped that work
// with its memory traffic, a kernel faster in cache than the memory stream would run at the
// stream's speed. If it does not, the kernel runs at the serial rate 1 / (1/cache + 1/memory).
//
//   compute_overlap [--threads 1] [--ops 0,1,2,3,4,6,8] [--mib 256] [--cache-kib 192]
//                   [--reps 7] [--prefetch 0] [--json]
//
// Kernel: 32-byte vectors of 16 uint16 lanes, 4 independent vectors per 128-byte step, each put
// through `ops` dependent multiply-adds (x = x * 3 + 1) and summed. Run over a buffer far larger
// than the caches (memory, one pass) and over a small one many times (cache, --cache-kib per
// thread: L2 on the dev box), alternating, median of --reps. Reported per ops: cache GB/s,
// memory GB/s, the serial prediction 1 / (1/cache + 1/memory at ops = 0), the overlap ideal
// min(cache, memory at ops = 0) and memory / ideal. The sums are checked against a scalar
// computation of the same arithmetic (exit 1 if they differ).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "int_list.h"

namespace {

using Clock = std::chrono::steady_clock;
typedef uint16_t v16u16 __attribute__((vector_size(32)));

constexpr int kMaxOps = 16;

template <int W>
__attribute__((always_inline)) inline uint64_t body(const uint8_t* p, size_t n, size_t ahead) {
  v16u16 acc[4] = {};
  const v16u16 three = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
  const v16u16 one = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  for (size_t i = 0; i + 128 <= n; i += 128) {
    if (ahead != 0) {
      __builtin_prefetch(p + i + ahead, 0, 3);
      __builtin_prefetch(p + i + ahead + 64, 0, 3);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      v16u16 x;
      std::memcpy(&x, p + i + 32 * c, 32);
#pragma GCC unroll 16
      for (int w = 0; w < W; ++w) x = x * three + one;
      acc[c] += x;
    }
  }
  const v16u16 s = acc[0] + acc[1] + acc[2] + acc[3];
  uint64_t r = 0;
  for (int l = 0; l < 16; ++l) r += s[l];
  return r;
}

using PassFn = uint64_t (*)(const uint8_t*, size_t, size_t);

template <int W>
uint64_t pass_generic(const uint8_t* p, size_t n, size_t ahead) {
  return body<W>(p, n, ahead);
}
#if defined(__x86_64__)
// 256-bit vectors where the CPU has them, as the GEMV kernels use.
template <int W>
__attribute__((target("avx2"))) uint64_t pass_avx2(const uint8_t* p, size_t n, size_t ahead) {
  return body<W>(p, n, ahead);
}
#endif

template <int... W>
PassFn pick(int ops, std::integer_sequence<int, W...>) {
  PassFn f = nullptr;
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  ((ops == W ? (f = avx2 ? pass_avx2<W> : pass_generic<W>) : f), ...);
#else
  ((ops == W ? (f = pass_generic<W>) : f), ...);
#endif
  return f;
}

PassFn pass_for(int ops) { return pick(ops, std::make_integer_sequence<int, kMaxOps + 1>{}); }

// The same sum, one lane at a time (the check).
uint64_t scalar(const uint8_t* p, size_t n, int ops) {
  uint16_t acc[4][16] = {};
  for (size_t i = 0; i + 128 <= n; i += 128) {
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 16; ++l) {
        uint16_t x;
        std::memcpy(&x, p + i + 32 * c + 2 * l, 2);
        for (int w = 0; w < ops; ++w) x = static_cast<uint16_t>(x * 3 + 1);
        acc[c][l] = static_cast<uint16_t>(acc[c][l] + x);
      }
    }
  }
  uint64_t r = 0;
  for (int l = 0; l < 16; ++l) {
    r += static_cast<uint16_t>(acc[0][l] + acc[1][l] + acc[2][l] + acc[3][l]);
  }
  return r;
}

// Runs f(thread) on `threads` threads; returns seconds.
double parallel(int threads, const std::function<void(int)>& f) {
  std::vector<std::thread> pool;
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(f, t);
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Row {
  int ops;
  double cache, memory;
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::vector<int> ops = {0, 1, 2, 3, 4, 6, 8};
  size_t mib = 256, cache_kib = 192, ahead = 0;
  int reps = 7;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--ops" && i + 1 < argc) {
      ops = geniex::bench::parse_int_list(argv[++i]);
    } else if (a == "--mib" && i + 1 < argc) {
      mib = static_cast<size_t>(std::atol(argv[++i]));
    } else if (a == "--cache-kib" && i + 1 < argc) {
      cache_kib = static_cast<size_t>(std::atol(argv[++i]));
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--prefetch" && i + 1 < argc) {
      ahead = static_cast<size_t>(std::atol(argv[++i]));
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr,
                   "usage: compute_overlap [--threads 1] [--ops 0,1,2,3,4,6,8] [--mib 256] "
                   "[--cache-kib 192] [--reps 7] [--prefetch 0] [--json]\n");
      return 2;
    }
  }
  const bool ops_ok = !ops.empty() && std::all_of(ops.begin(), ops.end(),
                                                  [](int w) { return w >= 0 && w <= kMaxOps; });
  if (threads < 1 || !ops_ok || mib == 0 || cache_kib == 0 || reps < 1) {
    std::fprintf(stderr, "compute_overlap: bad arguments (ops 0..%d)\n", kMaxOps);
    return 2;
  }
  // Per thread: a slice of the big buffer (first-touched by its thread) and its own small one.
  const size_t big = (mib << 20) / static_cast<size_t>(threads) / 128 * 128;
  const size_t small = std::max<size_t>(128, (cache_kib << 10) / 128 * 128);
  std::vector<std::unique_ptr<uint8_t[]>> bufs(static_cast<size_t>(threads)),
      smalls(static_cast<size_t>(threads));
  parallel(threads, [&](int t) {
    auto& b = bufs[static_cast<size_t>(t)];
    auto& s = smalls[static_cast<size_t>(t)];
    b.reset(new uint8_t[big]);
    s.reset(new uint8_t[small]);
    for (size_t i = 0; i < big; ++i) b[i] = static_cast<uint8_t>(i * 31 + static_cast<size_t>(t));
    for (size_t i = 0; i < small; ++i) s[i] = static_cast<uint8_t>(i * 7 + static_cast<size_t>(t));
  });
  const size_t inner = std::max<size_t>(1, (64u << 20) / small);  // ~64 MiB per cache timing
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  std::vector<Row> rows;
  for (int w : ops) {
    const PassFn f = pass_for(w);
    for (int t = 0; t < threads; ++t) {
      const uint8_t* s = smalls[static_cast<size_t>(t)].get();
      if (f(s, small, ahead) != scalar(s, small, w)) {
        std::fprintf(stderr, "compute_overlap: ops %d: vector sum != scalar sum\n", w);
        return 1;
      }
    }
    std::vector<double> cache, memory;
    for (int r = 0; r < reps; ++r) {
      const double tm = parallel(threads, [&](int t) {
        sums[static_cast<size_t>(t) * 8] = f(bufs[static_cast<size_t>(t)].get(), big, ahead);
      });
      memory.push_back(static_cast<double>(big) * threads / tm / 1e9);
      const double tc = parallel(threads, [&](int t) {
        uint64_t x = 0;
        for (size_t k = 0; k < inner; ++k) x += f(smalls[static_cast<size_t>(t)].get(), small, 0);
        sums[static_cast<size_t>(t) * 8 + 1] = x;
      });
      cache.push_back(static_cast<double>(small * inner) * threads / tc / 1e9);
    }
    rows.push_back({w, median(cache), median(memory)});
  }
  const double m0 = rows.front().ops == 0 ? rows.front().memory : 0;
  if (json) {
    std::printf(
        "{\"threads\": %d, \"mib\": %zu, \"cache_kib\": %zu, \"reps\": %d, \"prefetch\": %zu, "
        "\"rows\": [",
        threads, mib, cache_kib, reps, ahead);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::printf("%s{\"ops\": %d, \"cache_gbs\": %.3f, \"memory_gbs\": %.3f}", i ? ", " : "",
                  rows[i].ops, rows[i].cache, rows[i].memory);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("%d thread(s), %zu MiB from memory, %zu KiB in cache, prefetch %zu, median of %d\n",
              threads, mib, cache_kib, ahead, reps);
  std::printf(
      "| ops / 32 B | cache GB/s | memory GB/s | serial model | overlap ideal | memory / ideal "
      "|\n");
  std::printf("|--:|--:|--:|--:|--:|--:|\n");
  for (const Row& r : rows) {
    if (m0 > 0) {
      const double serial = 1 / (1 / r.cache + 1 / m0), ideal = std::min(r.cache, m0);
      std::printf("| %d | %.1f | %.1f | %.1f | %.1f | %.0f %% |\n", r.ops, r.cache, r.memory,
                  serial, ideal, 100 * r.memory / ideal);
    } else {
      std::printf("| %d | %.1f | %.1f | | | |\n", r.ops, r.cache, r.memory);
    }
  }
  return 0;
}
