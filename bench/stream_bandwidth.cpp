// Memory stream bandwidth (STREAM-like), to compare decode speed with its bandwidth bound:
// decode reads every weight once per token, so tok/s <= bandwidth / bytes of weights.
//
//   stream_bandwidth [--threads 1,2] [--mib 256] [--reps 7] [--json]
//
// Kernels, over arrays far larger than the last-level cache (default 3 x 256 MiB):
//   read   sum of a[i] (int64)      bytes = 8 N
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

namespace {

using Clock = std::chrono::steady_clock;

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
  double read, copy, triad;
};

Result measure(int threads, size_t n, int reps) {
  // Uninitialized allocation so each thread first-touches its own slice.
  std::unique_ptr<int64_t[]> a(new int64_t[n]);
  std::unique_ptr<double[]> b(new double[n]), c(new double[n]), d(new double[n]);
  parallel(threads, n, [&](size_t lo, size_t hi, int) {
    for (size_t i = lo; i < hi; ++i) {
      a[i] = static_cast<int64_t>(i);
      b[i] = 1.0;
      c[i] = 2.0;
      d[i] = 0.0;
    }
  });
  std::vector<int64_t> partial(static_cast<size_t>(threads) * 8);  // padded per thread
  double best_read = 1e30, best_copy = 1e30, best_triad = 1e30;
  for (int r = 0; r < reps; ++r) {
    best_read = std::min(best_read, parallel(threads, n, [&](size_t lo, size_t hi, int t) {
                           int64_t s = 0;
                           const int64_t* p = a.get();
                           for (size_t i = lo; i < hi; ++i) s += p[i];
                           partial[static_cast<size_t>(t) * 8] = s;
                         }));
    int64_t sum = 0;
    for (int t = 0; t < threads; ++t) sum += partial[static_cast<size_t>(t) * 8];
    g_sink = g_sink + sum;
    best_copy = std::min(best_copy, parallel(threads, n, [&](size_t lo, size_t hi, int) {
                           const double* src = b.get();
                           double* dst = d.get();
                           for (size_t i = lo; i < hi; ++i) dst[i] = src[i];
                         }));
    best_triad = std::min(best_triad, parallel(threads, n, [&](size_t lo, size_t hi, int) {
                            const double s = 3.0;
                            const double* x = b.get();
                            const double* y = c.get();
                            double* z = d.get();
                            for (size_t i = lo; i < hi; ++i) z[i] = x[i] + s * y[i];
                          }));
  }
  const double bytes = static_cast<double>(n) * 8.0;
  return {threads, bytes / best_read / 1e9, 2 * bytes / best_copy / 1e9,
          3 * bytes / best_triad / 1e9};
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) v.push_back(std::atoi(cur.c_str()));
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  size_t mib = 256;
  int reps = 7;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = parse_list(argv[++i]);
    } else if (a == "--mib" && i + 1 < argc) {
      mib = static_cast<size_t>(std::atol(argv[++i]));
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--json") {
      json = true;
    } else {
      std::fprintf(stderr,
                   "usage: stream_bandwidth [--threads 1,2] [--mib 256] [--reps 7] [--json]\n");
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
  for (int t : threads) results.push_back(measure(t, n, reps));
  if (json) {
    std::printf("{\"array_mib\": %zu, \"reps\": %d, \"results\": [", mib, reps);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::printf(
          "%s{\"threads\": %d, \"read_gbs\": %.3f, \"copy_gbs\": %.3f, \"triad_gbs\": %.3f}",
          i ? ", " : "", r.threads, r.read, r.copy, r.triad);
    }
    std::printf("]}\n");
  } else {
    std::printf("arrays of %zu MiB, best of %d (GB/s = 1e9 bytes/s)\n", mib, reps);
    std::printf("| threads |  read GB/s |  copy GB/s | triad GB/s |\n");
    std::printf("|--------:|-----------:|-----------:|-----------:|\n");
    for (const Result& r : results) {
      std::printf("| %7d | %10.2f | %10.2f | %10.2f |\n", r.threads, r.read, r.copy, r.triad);
    }
  }
  return 0;
}
