// Memory stream bandwidth (STREAM-like), to compare decode speed with its bandwidth bound:
// decode reads every weight once per token, so tok/s <= bandwidth / bytes of weights.
//
//   stream_bandwidth [--threads 1,2] [--mib 256] [--reps 7] [--prefetch 0] [--hugepages 1]
//                    [--json]
//
// The arrays are on transparent huge pages (core/huge_buffer.h: MADV_HUGEPAGE), as the engine's
// weights are; --hugepages 0 gives plain 4 KiB pages. On the Zen 3 dev box huge pages lift the
// one-thread read_tuned from ~11.6 to ~16 GB/s and read_streams by ~15 %: a linear stream no
// longer restarts the hardware prefetcher at every 4 KiB page boundary.
//
// Kernels, over arrays far larger than the last-level cache (default 3 x 256 MiB):
//   read   sum of a[i] (int64)      bytes = 8 N
//   read_tuned  the same sum, 32-byte vector loads into 4 accumulators, optionally with a
//               software prefetch `--prefetch` bytes ahead (default 0 = none: on the Zen 3
//               dev box a 4 KiB prefetch lowered it, 10.3 vs 11.6 GB/s at one thread).
//   read_streams  the same sum over each thread's slice cut into 4 parts read in lockstep,
//               256 bytes of each part in turn (4 concurrent memory streams per core): on the
//               Zen 3 dev box one core reads ~20-22 GB/s this way against ~16 with read_tuned
//               (turns of 4 KiB or more gain nothing, which is why an earlier check of
//               interleaved streams found no gain). The GEMV kernels read this way too
//               (CpuTuning::gemv_streams), so the decode bound bench/run_vs_llamacpp.py uses is the
//               best of read, read_tuned and read_streams: the scalar loop is latency-bound on
//               one core.
//   copy   c[i] = a[i]               bytes = 16 N  (STREAM convention: write-allocate traffic
//   triad  a[i] = b[i] + s * c[i]    bytes = 24 N   is not counted)
// Each thread owns a contiguous slice (first-touched by that thread). Reported: the best
// repetition in GB/s (1e9 bytes/s), as STREAM does.
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
#include <vector>

#include "core/huge_buffer.h"
#include "int_list.h"
#include "read_loops.h"

namespace {

using Clock = std::chrono::steady_clock;
using geniex::bench::streams_sum;
using geniex::bench::tuned_sum;

// Runs f(begin, end) on `threads` threads over [0, n), each a contiguous slice; returns seconds.
double parallel(int threads, size_t n, const std::function<void(size_t, size_t, int)>& f) {
  std::vector<std::thread> pool;
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) {
    const size_t b = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
    const size_t e = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
    pool.emplace_back(f, b, e, t);
  }
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

volatile int64_t g_sink = 0;  // keeps the read kernel from being optimized away

struct Result {
  int threads;
  double read, read_tuned, read_streams, copy, triad;
};

// n elements of 8 bytes, on huge pages or plain ones; pages are first touched by their user.
class Array {
 public:
  Array(size_t n, bool huge) {
    if (huge) {
      auto r = geniex::HugeBuffer::allocate(n * 8);
      if (!r.ok()) {
        std::fprintf(stderr, "stream_bandwidth: %s\n", r.status().message().c_str());
        std::exit(1);
      }
      buf_ = std::move(r).value();
      p_ = buf_.data();
      advised_ = buf_.advised();
    } else {
      plain_.reset(new int64_t[n]);  // uninitialized: first touch is the init loop
      p_ = reinterpret_cast<uint8_t*>(plain_.get());
    }
  }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(p_);
  }
  [[nodiscard]] bool advised() const { return advised_; }

 private:
  geniex::HugeBuffer buf_;
  std::unique_ptr<int64_t[]> plain_;
  uint8_t* p_ = nullptr;
  bool advised_ = false;
};

bool g_advised = false;  // the arrays were advised MADV_HUGEPAGE

Result measure(int threads, size_t n, int reps, size_t ahead, bool huge) {
  const Array a_arr(n, huge), b_arr(n, huge), c_arr(n, huge), d_arr(n, huge);
  g_advised = a_arr.advised();
  int64_t* const a = a_arr.as<int64_t>();
  double* const b = b_arr.as<double>();
  double* const c = c_arr.as<double>();
  double* const d = d_arr.as<double>();
  parallel(threads, n, [&](size_t lo, size_t hi, int) {
    for (size_t i = lo; i < hi; ++i) {
      a[i] = static_cast<int64_t>(i);
      b[i] = 1.0;
      c[i] = 2.0;
      d[i] = 0.0;
    }
  });
  std::vector<int64_t> partial(static_cast<size_t>(threads) * 8);  // padded per thread
  double best_read = 1e30, best_tuned = 1e30, best_streams = 1e30, best_copy = 1e30,
         best_triad = 1e30;
  for (int r = 0; r < reps; ++r) {
    best_read = std::min(best_read, parallel(threads, n, [&](size_t lo, size_t hi, int t) {
                           int64_t s = 0;
                           const int64_t* p = a;
                           for (size_t i = lo; i < hi; ++i) s += p[i];
                           partial[static_cast<size_t>(t) * 8] = s;
                         }));
    int64_t sum = 0;
    for (int t = 0; t < threads; ++t) sum += partial[static_cast<size_t>(t) * 8];
    g_sink = g_sink + sum;
    best_tuned = std::min(best_tuned, parallel(threads, n, [&](size_t lo, size_t hi, int t) {
                            partial[static_cast<size_t>(t) * 8] = tuned_sum(a, lo, hi, ahead);
                          }));
    int64_t tuned = 0;
    for (int t = 0; t < threads; ++t) tuned += partial[static_cast<size_t>(t) * 8];
    if (tuned != sum) {
      std::fprintf(stderr, "stream_bandwidth: read_tuned sum %lld != read sum %lld\n",
                   static_cast<long long>(tuned), static_cast<long long>(sum));
      std::exit(1);
    }
    best_streams = std::min(best_streams, parallel(threads, n, [&](size_t lo, size_t hi, int t) {
                              partial[static_cast<size_t>(t) * 8] = streams_sum(a, lo, hi);
                            }));
    int64_t streamed = 0;
    for (int t = 0; t < threads; ++t) streamed += partial[static_cast<size_t>(t) * 8];
    if (streamed != sum) {
      std::fprintf(stderr, "stream_bandwidth: read_streams sum %lld != read sum %lld\n",
                   static_cast<long long>(streamed), static_cast<long long>(sum));
      std::exit(1);
    }
    best_copy = std::min(best_copy, parallel(threads, n, [&](size_t lo, size_t hi, int) {
                           const double* src = b;
                           double* dst = d;
                           for (size_t i = lo; i < hi; ++i) dst[i] = src[i];
                         }));
    best_triad = std::min(best_triad, parallel(threads, n, [&](size_t lo, size_t hi, int) {
                            const double s = 3.0;
                            const double* x = b;
                            const double* y = c;
                            double* z = d;
                            for (size_t i = lo; i < hi; ++i) z[i] = x[i] + s * y[i];
                          }));
  }
  const double bytes = static_cast<double>(n) * 8.0;
  return {threads,
          bytes / best_read / 1e9,
          bytes / best_tuned / 1e9,
          bytes / best_streams / 1e9,
          2 * bytes / best_copy / 1e9,
          3 * bytes / best_triad / 1e9};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  size_t mib = 256;
  int reps = 7;
  size_t ahead = 0;
  bool huge = true;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = geniex::bench::parse_int_list(argv[++i]);
    } else if (a == "--mib" && i + 1 < argc) {
      mib = static_cast<size_t>(std::atol(argv[++i]));
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--prefetch" && i + 1 < argc) {
      ahead = static_cast<size_t>(std::atol(argv[++i]));
    } else if (a == "--hugepages" && i + 1 < argc) {
      huge = std::string(argv[++i]) != "0";
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr,
                   "usage: stream_bandwidth [--threads 1,2] [--mib 256] [--reps 7] [--prefetch 0] "
                   "[--hugepages 1] [--json]\n");
      return 2;
    }
  }
  if (threads.empty() || mib == 0 || reps < 1) {
    std::fprintf(stderr, "stream_bandwidth: bad arguments\n");
    return 2;
  }
  for (int t : threads) {
    if (t < 1) {
      std::fprintf(stderr, "stream_bandwidth: bad thread count %d\n", t);
      return 2;
    }
  }
  const size_t n = mib * 1024 * 1024 / 8;
  std::vector<Result> results;
  for (int t : threads) results.push_back(measure(t, n, reps, ahead, huge));
  if (json) {
    std::printf(
        "{\"array_mib\": %zu, \"reps\": %d, \"prefetch\": %zu, \"hugepages\": %s, \"results\": [",
        mib, reps, ahead, g_advised ? "true" : "false");
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::printf(
          "%s{\"threads\": %d, \"read_gbs\": %.3f, \"read_tuned_gbs\": %.3f, "
          "\"read_streams_gbs\": %.3f, \"copy_gbs\": %.3f, \"triad_gbs\": %.3f}",
          i ? ", " : "", r.threads, r.read, r.read_tuned, r.read_streams, r.copy, r.triad);
    }
    std::printf("]}\n");
  } else {
    std::printf("arrays of %zu MiB on %s, best of %d (GB/s = 1e9 bytes/s)\n", mib,
                g_advised ? "huge pages (advised)" : "4 KiB pages", reps);
    std::printf(
        "| threads |  read GB/s | read_tuned GB/s | read_streams GB/s |  copy GB/s | triad GB/s "
        "|\n");
    std::printf(
        "|--------:|-----------:|----------------:|------------------:|-----------:|-----------:|"
        "\n");
    for (const Result& r : results) {
      std::printf("| %7d | %10.2f | %15.2f | %17.2f | %10.2f | %10.2f |\n", r.threads, r.read,
                  r.read_tuned, r.read_streams, r.copy, r.triad);
    }
  }
  return 0;
}
