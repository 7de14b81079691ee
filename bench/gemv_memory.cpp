// How close one decode GEMV kernel comes to the memory stream: the question behind "1B decode at
// >= 85 % of the bandwidth bound" (issue 5), asked of the engine's own kernels instead of a
// synthetic loop (compute_overlap). One thread.
//
//   gemv_memory [--mib 256] [--reps 15] [--layout packed|rows] [--json] TYPE ROWS K
//   e.g. gemv_memory q4_k 8192 2048      (a Llama-3.2-1B ffn_gate / ffn_up)
//
// A random ROWS x K matrix of TYPE is laid out as the engine reads it by default
// (backends::cpu::repack_enabled: `packed`, the row-interleaved groups of cpu::packed_kernels, or
// `rows`, the file's rows for cpu::dot_kernels, as Q6_K runs) and copied over --mib MiB
// of transparent huge pages, as the engine's weights are. Each repetition then times, in turn
// (the order rotates, so a noisy neighbour hits all three alike):
//   memory  one GEMV (m = 1) over every copy in turn: each byte comes from DRAM once;
//   cache   the same number of GEMVs over the first copy only (from L2/L3 when it fits);
//   read    the bound's own loop over the whole buffer: stream_bandwidth's read_streams
//           (read_loops.h: 4 parts read in lockstep, 256 bytes of each in turn).
// Reported: the medians in GB/s; memory / read, the fraction of the bound this kernel can reach
// on its own (decode at 1 thread is this, weighted by bytes, less the other work); and the
// serial prediction 1 / (1/cache + 1/read) / read, what it would reach if it did not overlap its
// arithmetic with its memory traffic at all. The memory and cache passes must give the same
// bits for the last copy (same bytes, same kernel): exit 1 if not.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/repack.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "core/dtype.h"
#include "core/huge_buffer.h"
#include "random_rows.h"
#include "read_loops.h"

namespace {

using Clock = std::chrono::steady_clock;
using geniex::GgmlType;
namespace kern = geniex::cpu;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int usage() {
  std::fprintf(stderr,
               "usage: gemv_memory [--mib 256] [--reps 15] [--layout packed|rows] [--json] TYPE "
               "ROWS K\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256;
  int reps = 15;
  std::string layout;
  bool json = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) {
      mib = static_cast<size_t>(std::max(0L, std::atol(argv[++i])));
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--layout" && i + 1 < argc) {
      layout = argv[++i];
    } else if (a == "--json") {
      json = true;
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 3 || mib == 0 || reps < 1) return usage();
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
  // The matrix as the kernel reads it, padded to 1 KiB so copies stay aligned.
  std::vector<uint8_t> mat;
  if (packed) {
    mat.resize(kern::packed_bytes(*type, k, rows));
    kern::repack_groups(*type, k, w.data(), *wrow, rows, 0,
                        (rows + kern::kPackRows - 1) / kern::kPackRows, mat.data());
  } else {
    mat = w;
  }
  const size_t mat_bytes = mat.size();
  const size_t stride = (mat_bytes + 1023) / 1024 * 1024;
  const size_t copies = std::max<size_t>(2, (mib << 20) / stride);
  auto buf = geniex::HugeBuffer::allocate(copies * stride);
  if (!buf.ok()) {
    std::fprintf(stderr, "gemv_memory: %s\n", buf.status().message().c_str());
    return 1;
  }
  uint8_t* base = buf.value().data();
  for (size_t c = 0; c < copies; ++c) std::memcpy(base + c * stride, mat.data(), mat_bytes);

  // One activation row, quantized (and prepared for the packed kernel).
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(k));
  for (auto& v : x) v = nd(rng);
  const auto& quantize_act = packed ? pk->quantize_act : dk->quantize_act;
  const GgmlType act_type = packed ? pk->act_type : dk->act_type;
  const size_t qrow = *geniex::ggml_row_bytes(act_type, static_cast<uint64_t>(k));
  std::vector<uint8_t> q(qrow), a(packed ? pk->act_bytes(k) : 0);
  quantize_act(x.data(), q.data(), k);
  if (packed) pk->prepare_act(q.data(), k, a.data());
  std::vector<float> out(static_cast<size_t>(rows)), out_mem(out.size());
  auto gemv = [&](const uint8_t* m, float* o) {
    if (packed) {
      pk->gemm(k, m, rows, a.data(), a.size(), 1, o, static_cast<size_t>(rows));
    } else {
      dk->gemm(k, m, *wrow, rows, q.data(), qrow, 1, o, static_cast<size_t>(rows));
    }
  };

  std::vector<double> t_mem, t_cache, t_read;
  uint64_t sink = 0;
  for (int r = 0; r <= reps; ++r) {  // repetition 0 is the warm-up
    for (int i = 0; i < 3; ++i) {
      const int which = (i + r) % 3;
      const auto t0 = Clock::now();
      if (which == 0) {
        for (size_t c = 0; c < copies; ++c) gemv(base + c * stride, out_mem.data());
      } else if (which == 1) {
        for (size_t c = 0; c < copies; ++c) gemv(base, out.data());
      } else {
        sink += static_cast<uint64_t>(geniex::bench::streams_sum(
            reinterpret_cast<const int64_t*>(base), 0, copies * stride / sizeof(int64_t)));
      }
      const double s = seconds_since(t0);
      if (r > 0) (which == 0 ? t_mem : which == 1 ? t_cache : t_read).push_back(s);
    }
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
        "\"matrix_mb\": %.3f, \"copies\": %zu, \"memory_gbs\": %.3f, \"cache_gbs\": %.3f, "
        "\"read_streams_gbs\": %.3f, \"memory_of_read\": %.4f, \"serial_of_read\": %.4f, "
        "\"advised\": %s, \"sink\": %llu}\n",
        args[0].c_str(), layout.c_str(), isa.c_str(), static_cast<long long>(rows),
        static_cast<long long>(k), static_cast<double>(mat_bytes) / 1e6, copies, mem, cache, read,
        mem / read, serial / read, buf.value().advised() ? "true" : "false",
        static_cast<unsigned long long>(sink % 1000));
    return 0;
  }
  std::printf("%s %lld x %lld, %s layout (%s), %.2f MB x %zu copies on %s pages, median of %d\n",
              args[0].c_str(), static_cast<long long>(rows), static_cast<long long>(k),
              layout.c_str(), isa.c_str(), static_cast<double>(mat_bytes) / 1e6, copies,
              buf.value().advised() ? "huge" : "4 KiB", reps);
  std::printf("| memory GB/s | cache GB/s | read_streams GB/s | memory / read | serial / read |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  std::printf("| %.2f | %.2f | %.2f | %.0f %% | %.0f %% |\n", mem, cache, read, 100 * mem / read,
              100 * serial / read);
  if (sink == 1) std::printf(" \n");  // keeps the read sums live
  return 0;
}
