// How close one decode GEMV kernel comes to the memory stream: the question behind "1B decode at
// >= 85 % of the bandwidth bound" (issue 5), asked of the engine's own kernels instead of a
// synthetic loop (compute_overlap). One thread by default; --threads N runs the GEMV on an
// N-thread pool (the engine's task split) and the read loop as N slices, one per thread.
//
//   gemv_memory [--mib 256] [--reps 15] [--threads 1] [--layout packed|rows] [--json] TYPE ROWS K
//   e.g. gemv_memory q4_k 8192 2048      (a Llama-3.2-1B ffn_gate / ffn_up)
//
// A random ROWS x K matrix of TYPE is held as the engine holds it, --mib MiB of copies on
// transparent huge pages: by default in the engine's layout (backends::cpu::repack_enabled):
// `packed`, each copy a PackedMatrix from pack_matrix, or `rows`, the file's rows (Q6_K). Each
// GEMV is the engine's own call (matmul_packed or matmul, m = 1, a ThreadPool of --threads: its
// task split, prefetch and stream walk included). Each repetition times, in turn (the order
// rotates, so a noisy neighbour hits all three alike):
//   memory  one GEMV over every copy in turn: each byte comes from DRAM once;
//   cache   the same number of GEMVs over the first copy only (from L2/L3 when it fits);
//   read    the bound's own loop over a buffer of the same size: stream_bandwidth's
//           read_streams (read_loops.h: 4 parts read in lockstep, 256 bytes of each in turn).
// Reported: the medians in GB/s; memory / read, the fraction of the bound this kernel can reach
// on its own (decode at 1 thread is this, weighted by bytes, less the other work); and the
// serial prediction 1 / (1/cache + 1/read) / read, what it would reach if it did not overlap its
// arithmetic with its memory traffic at all. The memory and cache passes must give the same
// bits for the last copy (same bytes, same kernel): exit 1 if not.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/repack.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "core/dtype.h"
#include "core/huge_buffer.h"
#include "core/thread_pool.h"
#include "random_rows.h"
#include "read_loops.h"

namespace {

using Clock = std::chrono::steady_clock;
using geniex::GgmlType;
namespace kern = geniex::cpu;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

volatile uint64_t g_sink = 0;  // keeps the read loop's sums (and so its loads) alive

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int usage() {
  std::fprintf(stderr,
               "usage: gemv_memory [--mib 256] [--reps 15] [--threads 1] [--layout packed|rows] "
               "[--json] TYPE ROWS K\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256;
  int reps = 15;
  int threads = 1;
  std::string layout;
  bool json = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) {
      mib = static_cast<size_t>(std::max(0L, std::atol(argv[++i])));
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--layout" && i + 1 < argc) {
      layout = argv[++i];
    } else if (a == "--json") {
      json = true;
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 3 || mib == 0 || reps < 1 || threads < 1 || threads > 256) return usage();
  // The copies and the read buffer take 2 x --mib: refuse what the machine cannot hold rather
  // than be killed for it part way.
  const size_t phys_mib = static_cast<size_t>(::sysconf(_SC_PHYS_PAGES)) *
                              static_cast<size_t>(::sysconf(_SC_PAGESIZE)) >>
                          20;
  if (mib > phys_mib / 2) {
    std::fprintf(stderr, "gemv_memory: --mib %zu needs %zu MiB; this machine has %zu MiB\n", mib,
                 2 * mib, phys_mib);
    return 2;
  }
  std::string name = args[0];
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const auto type = geniex::ggml_type_from_name(name);
  const int64_t rows = std::atoll(args[1].c_str()), k = std::atoll(args[2].c_str());
  if (!type || rows <= 0 || k <= 0) return usage();
  const auto dk = kern::dot_kernels(*type);
  const auto pk = kern::packed_kernels(*type);
  const auto wrow = geniex::ggml_row_bytes(*type, static_cast<uint64_t>(k));
  if (!dk || !wrow) {
    std::fprintf(stderr, "gemv_memory: no kernel for %s with K = %lld\n", args[0].c_str(),
                 static_cast<long long>(k));
    return 1;
  }
  const bool can_pack = pk && kern::packed_group_bytes(*type, k) > 0;
  if (layout.empty()) {  // the engine's choice
    layout = can_pack && geniex::backends::cpu::repack_enabled(*type) ? "packed" : "rows";
  }
  if (layout != "packed" && layout != "rows") return usage();
  if (layout == "packed" && !can_pack) {
    std::fprintf(stderr, "gemv_memory: %s has no packed layout for K = %lld\n", args[0].c_str(),
                 static_cast<long long>(k));
    return 1;
  }
  const bool packed = layout == "packed";

  std::mt19937 rng(1);
  const std::vector<uint8_t> w = geniex::bench::random_rows(*type, rows, k, *wrow, rng);
  if (w.empty()) {
    std::fprintf(stderr, "gemv_memory: quantize_row failed\n");
    return 1;
  }
  // The copies, as the engine holds them: packed matrices (each its own HugeBuffer, made by
  // the engine's pack_matrix) or the file's rows, 1 KiB apart in one HugeBuffer.
  geniex::ThreadPool pool(threads);
  namespace be = geniex::backends::cpu;
  const size_t mat_bytes = packed ? kern::packed_bytes(*type, k, rows) : w.size();
  const size_t stride = (mat_bytes + 1023) / 1024 * 1024;
  const size_t copies = std::max<size_t>(2, (mib << 20) / stride);
  std::vector<std::unique_ptr<be::PackedMatrix>> pms;
  geniex::HugeBuffer rows_buf;
  if (packed) {
    for (size_t c = 0; c < copies; ++c) {
      pms.push_back(be::pack_matrix(pool, *type, std::span<const uint8_t>(w), k, rows));
      if (!pms.back()) {
        std::fprintf(stderr, "gemv_memory: pack_matrix failed\n");
        return 1;
      }
    }
  } else {
    auto r = geniex::HugeBuffer::allocate(copies * stride);
    if (!r.ok()) {
      std::fprintf(stderr, "gemv_memory: %s\n", r.status().message().c_str());
      return 1;
    }
    rows_buf = std::move(r).value();
    for (size_t c = 0; c < copies; ++c) {
      std::memcpy(rows_buf.data() + c * stride, w.data(), mat_bytes);
    }
  }
  // The read pass streams a buffer of the same size (the bound's loop over its own array).
  auto read_buf = geniex::HugeBuffer::allocate(copies * stride);
  if (!read_buf.ok()) {
    std::fprintf(stderr, "gemv_memory: %s\n", read_buf.status().message().c_str());
    return 1;
  }
  for (size_t i = 0; i < read_buf.value().size(); i += 64) {
    read_buf.value().data()[i] = static_cast<uint8_t>(i >> 6);
  }

  // One activation row (quantized by the engine at the first call, then reused: the held
  // activation of the Scratch, as q/k/v or gate/up share theirs).
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(k));
  for (auto& v : x) v = nd(rng);
  std::vector<float> out(static_cast<size_t>(rows)), out_mem(out.size());
  be::Scratch scratch;
  bool failed = false;
  auto gemv = [&](size_t c, float* o) {
    const geniex::Status st =
        packed ? be::matmul_packed(pool, scratch, *pms[c], x.data(), 1, o)
               : be::matmul(pool, scratch, *type,
                            std::span<const uint8_t>(rows_buf.data() + c * stride, mat_bytes), k,
                            rows, x.data(), 1, o);
    failed = failed || !st.ok();
  };
  const uint8_t* base = read_buf.value().data();

  std::vector<double> t_mem, t_cache, t_read;
  for (int r = 0; r <= reps; ++r) {  // repetition 0 is the warm-up
    for (int i = 0; i < 3; ++i) {
      const int which = (i + r) % 3;
      const auto t0 = Clock::now();
      if (which == 0) {
        for (size_t c = 0; c < copies; ++c) gemv(c, out_mem.data());
      } else if (which == 1) {
        for (size_t c = 0; c < copies; ++c) gemv(0, out.data());
      } else {
        // One slice per thread, each read with the bound's own loop.
        const size_t n = copies * stride / sizeof(int64_t);
        std::vector<int64_t> sums(static_cast<size_t>(threads));
        pool.parallel_for(threads, [&](int64_t t, int) {
          const size_t lo = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
          const size_t hi = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
          sums[static_cast<size_t>(t)] =
              geniex::bench::streams_sum(reinterpret_cast<const int64_t*>(base), lo, hi);
        });
        for (int64_t v : sums) g_sink = g_sink + static_cast<uint64_t>(v);
      }
      const double s = seconds_since(t0);
      if (r > 0) (which == 0 ? t_mem : which == 1 ? t_cache : t_read).push_back(s);
    }
  }
  if (failed) {
    std::fprintf(stderr, "gemv_memory: a matmul failed\n");
    return 1;
  }
  if (std::memcmp(out.data(), out_mem.data(), out.size() * sizeof(float)) != 0) {
    std::fprintf(stderr, "gemv_memory: the memory and cache passes differ\n");
    return 1;
  }
  const double kernel_bytes = static_cast<double>(copies * mat_bytes);
  const double read_bytes = static_cast<double>(copies * stride);
  const double mem = kernel_bytes / median(t_mem) / 1e9;
  const double cache = kernel_bytes / median(t_cache) / 1e9;
  const double read = read_bytes / median(t_read) / 1e9;
  const double serial = 1.0 / (1.0 / cache + 1.0 / read);
  const std::string isa(kern::isa_name(packed ? pk->isa : dk->isa));
  if (json) {
    std::printf(
        "{\"type\": \"%s\", \"layout\": \"%s\", \"isa\": \"%s\", \"rows\": %lld, \"k\": %lld, "
        "\"threads\": %d, \"matrix_mb\": %.3f, \"copies\": %zu, \"memory_gbs\": %.3f, "
        "\"cache_gbs\": %.3f, "
        "\"read_streams_gbs\": %.3f, \"memory_of_read\": %.4f, \"serial_of_read\": %.4f, "
        "\"advised\": %s}\n",
        args[0].c_str(), layout.c_str(), isa.c_str(), static_cast<long long>(rows),
        static_cast<long long>(k), threads, static_cast<double>(mat_bytes) / 1e6, copies, mem,
        cache, read, mem / read, serial / read, read_buf.value().advised() ? "true" : "false");
    return 0;
  }
  std::printf(
      "%s %lld x %lld, %s layout (%s), %d thread(s), %.2f MB x %zu copies on %s pages, median of "
      "%d\n",
      args[0].c_str(), static_cast<long long>(rows), static_cast<long long>(k), layout.c_str(),
      isa.c_str(), threads, static_cast<double>(mat_bytes) / 1e6, copies,
      read_buf.value().advised() ? "huge" : "4 KiB", reps);
  std::printf("| memory GB/s | cache GB/s | read_streams GB/s | memory / read | serial / read |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  std::printf("| %.2f | %.2f | %.2f | %.0f %% | %.0f %% |\n", mem, cache, read, 100 * mem / read,
              100 * serial / read);
  return 0;
}
