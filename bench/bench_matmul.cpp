// Matmul kernel micro-benchmark: the row kernels (cpu::dot_kernels) against the repacked-weight
// kernels (cpu::packed_kernels) on one weight matrix, single thread, for several activation
// row counts. Each time is the CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) of one
// whole gemm call (activation quantization and preparation excluded), median of REPS runs after
// one warm-up, so other processes on a shared machine matter less than with wall time. The ISA is
// the detected one (--isa avx2|scalar|... caps it; --prefetch BYTES and --streams N set the GEMV
// knobs of kernels/gemv_tuning.h, which GEMVs through the engine's matmul_packed read).
//
// --threads N instead times what the engine runs: cpu::matmul_packed (float activations
// quantized and prepared, then the packed GEMM split into tasks over a ThreadPool of N), wall
// clock, median of REPS; "GMAC/s" is rows * K * m per second.
//
//   bench_matmul [--reps N] [--threads N] [--isa NAME] [--prefetch BYTES] [--streams N]
//                TYPE ROWS K M[,M...]
//   e.g. bench_matmul q8_0 32768 2048 1,2,4,8,16,64
// Types without a packed kernel (f16, f32, bf16) time the row kernels alone, in GFLOP/s, or with
// --threads N the engine's cpu::matmul over N threads.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/gemv_tuning.h"
#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/repack.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "quant/quant.h"
#include "random_rows.h"

namespace {

using geniex::GgmlType;
namespace kern = geniex::cpu;

double thread_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

template <typename F>
double median_ms(int reps, F&& f) {
  f();  // warm-up (page faults, caches)
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = thread_ms();
    f();
    t.push_back(thread_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Wall-clock median of `reps` calls of f (returning false on failure) after one warm-up call,
// each from a fresh Scratch as the engine's first matmul of a step; nullopt if a call failed.
template <typename F>
std::optional<double> median_wall_ms(int reps, geniex::backends::cpu::Scratch& scratch, F&& f) {
  std::vector<double> t;
  for (int i = 0; i <= reps; ++i) {
    scratch = {};
    const auto t0 = std::chrono::steady_clock::now();
    if (!f()) return std::nullopt;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) t.push_back(ms);  // the first is the warm-up
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> v;
  size_t p = 0;
  while (p < s.size()) {
    const size_t e = s.find(',', p);
    v.push_back(std::atoll(s.substr(p, e == std::string::npos ? e : e - p).c_str()));
    if (e == std::string::npos) break;
    p = e + 1;
  }
  return v;
}

// Types without a packed kernel (F16, F32, BF16): the row kernels alone, GFLOP/s = 2 rows K m / t.
int row_kernels_only(GgmlType type, const kern::DotKernels& dk, int64_t rows, int64_t k,
                     size_t wrow, const std::vector<int64_t>& ms, int reps) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  const std::vector<uint8_t> w = geniex::bench::random_rows(type, rows, k, wrow, rng);
  if (w.empty()) return 1;
  const int64_t max_m = *std::max_element(ms.begin(), ms.end());
  const size_t qrow = *geniex::ggml_row_bytes(dk.act_type, static_cast<uint64_t>(k));
  std::vector<uint8_t> q(qrow * static_cast<size_t>(max_m));
  std::vector<float> x(static_cast<size_t>(k));
  for (int64_t j = 0; j < max_m; ++j) {
    for (auto& v : x) v = nd(rng);
    dk.quantize_act(x.data(), q.data() + j * qrow, k);
  }
  std::vector<float> out(static_cast<size_t>(rows * max_m));
  std::printf("%lld x %lld, row kernels (%s), thread CPU time, median of %d\n",
              static_cast<long long>(rows), static_cast<long long>(k),
              std::string(kern::isa_name(dk.isa)).c_str(), reps);
  std::printf("%6s %12s %10s\n", "m", "ms", "GFLOP/s");
  for (int64_t m : ms) {
    const double t = median_ms(reps, [&] {
      dk.gemm(k, w.data(), wrow, rows, q.data(), qrow, m, out.data(), static_cast<size_t>(rows));
    });
    std::printf("%6lld %12.3f %10.1f\n", static_cast<long long>(m), t,
                2.0 * static_cast<double>(rows * k * m) / (t * 1e6));
  }
  return 0;
}

// Types without a packed kernel over a thread pool: the engine's cpu::matmul (activations
// converted, then the row kernels' gemm in tasks), wall clock, GFLOP/s = 2 rows K m / t.
int row_kernels_threads(GgmlType type, int64_t rows, int64_t k, size_t wrow,
                        const std::vector<int64_t>& ms, int reps, int threads) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  const std::vector<uint8_t> w = geniex::bench::random_rows(type, rows, k, wrow, rng);
  if (w.empty()) return 1;
  const int64_t max_m = *std::max_element(ms.begin(), ms.end());
  std::vector<float> xs(static_cast<size_t>(k * max_m));
  for (auto& v : xs) v = nd(rng);
  std::vector<float> y(static_cast<size_t>(rows * max_m));
  geniex::ThreadPool pool(threads);
  geniex::backends::cpu::Scratch scratch;
  std::printf("%lld x %lld, cpu::matmul, %d threads, wall clock, median of %d\n",
              static_cast<long long>(rows), static_cast<long long>(k), threads, reps);
  std::printf("%6s %12s %10s\n", "m", "ms", "GFLOP/s");
  for (int64_t m : ms) {
    const auto med = median_wall_ms(reps, scratch, [&] {
      return geniex::backends::cpu::matmul(pool, scratch, type, std::span<const uint8_t>(w), k,
                                           rows, xs.data(), m, y.data())
          .ok();
    });
    if (!med) {
      std::fprintf(stderr, "matmul failed\n");
      return 1;
    }
    std::printf("%6lld %12.3f %10.1f\n", static_cast<long long>(m), *med,
                2.0 * static_cast<double>(rows * k * m) / (*med * 1e6));
  }
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_matmul [--reps N] [--threads N] [--isa NAME] [--prefetch BYTES]\n"
               "                    [--streams N] TYPE ROWS K M[,M...]\n"
               "  TYPE: a weight type with a packed layout (q4_0, q5_0, q8_0, q4_k, q6_k)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  int threads = 0;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--isa" && i + 1 < argc) {
      const auto isa = geniex::cpu::parse_isa(argv[++i]);
      if (!isa) return usage();
      geniex::cpu::set_isa_cap(isa);
    } else if (a == "--prefetch" && i + 1 < argc) {
      geniex::cpu::set_gemv_prefetch_bytes(std::strtoull(argv[++i], nullptr, 10));
    } else if (a == "--streams" && i + 1 < argc) {
      geniex::cpu::set_gemv_streams(std::atoi(argv[++i]));
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 4) return usage();
  std::string name = args[0];  // q8_0 or Q8_0
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const auto type = geniex::ggml_type_from_name(name);
  const int64_t rows = std::atoll(args[1].c_str()), k = std::atoll(args[2].c_str());
  const std::vector<int64_t> ms = parse_list(args[3]);
  if (!type || rows <= 0 || k <= 0 || ms.empty()) return usage();
  const auto dk = kern::dot_kernels(*type);
  const auto pk = kern::packed_kernels(*type);
  const auto wrow = geniex::ggml_row_bytes(*type, static_cast<uint64_t>(k));
  if (dk && !pk && wrow) {
    return threads == 0 ? row_kernels_only(*type, *dk, rows, k, *wrow, ms, reps)
                        : row_kernels_threads(*type, rows, k, *wrow, ms, reps, threads);
  }
  if (!dk || !pk || !wrow || kern::packed_group_bytes(*type, k) == 0) {
    std::fprintf(stderr, "no packed kernel for %s with K = %lld\n", args[0].c_str(),
                 static_cast<long long>(k));
    return 1;
  }
  for (int64_t m : ms) {
    if (m <= 0) return usage();
  }
  const int64_t max_m = *std::max_element(ms.begin(), ms.end());

  // Weights: random normal rows, quantized one row at a time.
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  const std::vector<uint8_t> w = geniex::bench::random_rows(*type, rows, k, *wrow, rng);
  if (w.empty()) {
    std::fprintf(stderr, "quantize_row failed\n");
    return 1;
  }
  std::vector<float> x(static_cast<size_t>(k));
  std::vector<uint8_t> packed(kern::packed_bytes(*type, k, rows));
  kern::repack_groups(*type, k, w.data(), *wrow, rows, 0,
                      (rows + kern::kPackRows - 1) / kern::kPackRows, packed.data());

  if (threads > 0) {  // the engine's matmul_packed over a thread pool, wall clock
    geniex::ThreadPool pool(threads);
    auto pm = geniex::backends::cpu::pack_matrix(pool, *type, std::span<const uint8_t>(w), k, rows);
    if (!pm) {
      std::fprintf(stderr, "no packed matrix for %s\n", args[0].c_str());
      return 1;
    }
    std::vector<float> xs(static_cast<size_t>(k * max_m));
    for (auto& v : xs) v = nd(rng);
    std::vector<float> y(static_cast<size_t>(rows * max_m));
    geniex::backends::cpu::Scratch scratch;
    std::printf("%s %lld x %lld, matmul_packed (%s), %d threads, wall clock, median of %d\n",
                args[0].c_str(), static_cast<long long>(rows), static_cast<long long>(k),
                std::string(kern::isa_name(pk->isa)).c_str(), threads, reps);
    std::printf("%6s %12s %10s %10s\n", "m", "ms", "GMAC/s", "GB/s");
    for (int64_t m : ms) {
      const auto med_ms = median_wall_ms(reps, scratch, [&] {
        return geniex::backends::cpu::matmul_packed(pool, scratch, *pm, xs.data(), m, y.data())
            .ok();
      });
      if (!med_ms) {
        std::fprintf(stderr, "matmul_packed failed\n");
        return 1;
      }
      const double med = *med_ms;
      std::printf("%6lld %12.3f %10.1f %10.2f\n", static_cast<long long>(m), med,
                  static_cast<double>(rows * k * m) / (med * 1e6),
                  static_cast<double>(pm->bytes) / (med * 1e6));
    }
    return 0;
  }

  // Activations: quantized rows for the row kernels, prepared rows for the packed ones.
  const size_t qrow = *geniex::ggml_row_bytes(dk->act_type, static_cast<uint64_t>(k));
  const size_t arow = pk->act_bytes(k);
  std::vector<uint8_t> q(qrow * static_cast<size_t>(max_m)), a(arow * static_cast<size_t>(max_m));
  for (int64_t j = 0; j < max_m; ++j) {
    for (auto& v : x) v = nd(rng);
    dk->quantize_act(x.data(), q.data() + j * qrow, k);
    pk->prepare_act(q.data() + j * qrow, k, a.data() + j * arow);
  }
  std::vector<float> out(static_cast<size_t>(rows * max_m));

  std::printf("%s %lld x %lld, row kernels (%s) vs packed (%s), thread CPU time, median of %d\n",
              args[0].c_str(), static_cast<long long>(rows), static_cast<long long>(k),
              std::string(kern::isa_name(dk->isa)).c_str(),
              std::string(kern::isa_name(pk->isa)).c_str(), reps);
  std::printf("%6s %12s %12s %8s %14s\n", "m", "old ms", "packed ms", "speedup", "packed GB/s");
  const double wbytes = static_cast<double>(packed.size());
  for (int64_t m : ms) {
    const double t_old = median_ms(reps, [&] {
      dk->gemm(k, w.data(), *wrow, rows, q.data(), qrow, m, out.data(), static_cast<size_t>(rows));
    });
    const double t_new = median_ms(reps, [&] {
      pk->gemm(k, packed.data(), rows, a.data(), arow, m, out.data(), static_cast<size_t>(rows));
    });
    std::printf("%6lld %12.3f %12.3f %7.2fx %14.2f\n", static_cast<long long>(m), t_old, t_new,
                t_old / t_new, wbytes / (t_new * 1e6));
  }
  return 0;
}
