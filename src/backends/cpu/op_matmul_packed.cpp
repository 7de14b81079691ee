// Matmul over weights repacked by the prepare step into the kernels' row-interleaved layout
// (kernels/repack.h). The packed copy replaces the original for this backend's matmuls; the
// original pages (file-backed when the weights come from a GGUF mapping) are handed back to the
// kernel after packing, so resident memory does not double.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/matmul_tasks.h"

namespace geniex::backends::cpu {
namespace {

namespace kern = ::geniex::cpu;

constexpr int64_t kGroupsPerTaskGemm = 8;   // 64 rows
constexpr int64_t kGroupsPerTaskGemv = 32;  // 256 rows: long linear runs for the prefetcher
// A GEMM of a few activation rows (a batched decode step) is one pass over the weights, which
// come from memory: long runs per task, so the kernel's prefetch of the chunk ahead runs in
// every task but its last chunk (Q8_0 262144 x 640 with 8 rows, 2 threads: 8-group tasks,
// where it never ran, 25.6 ms median; these 19.4 ms, bench_matmul --threads 2).
constexpr int64_t kFewCols = 16;
constexpr int64_t kGroupsPerTaskFew = 512;

size_t sz(int64_t v) { return static_cast<size_t>(v); }

// Drops this process's mapping of the whole pages inside [p, p + n). MADV_PAGEOUT keeps the
// contents in every case (file-backed pages are re-read on access, anonymous ones swapped or
// left alone), unlike MADV_DONTNEED, which would zero anonymous memory.
void release_pages([[maybe_unused]] const uint8_t* p, [[maybe_unused]] size_t n) {
#if defined(MADV_PAGEOUT)
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto b = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const auto e = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (e > b) {
    // Advice only: an old kernel without MADV_PAGEOUT answers EINVAL and nothing changes.
    (void)::madvise(reinterpret_cast<void*>(b), e - b, MADV_PAGEOUT);
  }
#endif
}

}  // namespace

std::unique_ptr<PackedMatrix> pack_matrix(ThreadPool& pool, GgmlType wtype,
                                          std::span<const uint8_t> w, int64_t k, int64_t n,
                                          bool huge_pages, HugeArena* arena) {
  const auto kernels = kern::packed_kernels(wtype);
  const size_t gb = kern::packed_group_bytes(wtype, k);
  const auto w_row = ggml_row_bytes(wtype, static_cast<uint64_t>(k));
  if (!kernels || gb == 0 || !w_row || w.size() < *w_row * sz(n) || n <= 0) return nullptr;
  auto p = std::make_unique<PackedMatrix>();
  p->type = wtype;
  p->k = k;
  p->n = n;
  p->kernels = *kernels;
  p->bytes = kern::packed_bytes(wtype, k, n);
  if (arena != nullptr) {
    auto block = arena->allocate(p->bytes);
    if (!block.ok()) return nullptr;  // W is still there for matmul()
    p->data = block->data;
  } else {
    auto buf = HugeBuffer::allocate(p->bytes, huge_pages);
    if (!buf.ok()) return nullptr;
    p->own = std::move(buf).value();
    p->data = p->own.data();
  }
  const int64_t groups = (n + kern::kPackRows - 1) / kern::kPackRows;
  constexpr int64_t kGroupsPerTask = 64;
  pool.parallel_for((groups + kGroupsPerTask - 1) / kGroupsPerTask, [&](int64_t t, int) {
    const int64_t g0 = t * kGroupsPerTask;
    const int64_t g1 = std::min(groups, g0 + kGroupsPerTask);
    kern::repack_groups(wtype, k, w.data(), *w_row, n, g0, g1, p->data);
    // Slice by slice, so the original and the packed copy of a large matrix (an LM head) are
    // never both resident in full.
    const int64_t r0 = g0 * kern::kPackRows, r1 = std::min(n, g1 * kern::kPackRows);
    release_pages(w.data() + sz(r0) * *w_row, sz(r1 - r0) * *w_row);
  });
  return p;
}

const uint8_t* copy_to_huge_pages(ThreadPool& pool, std::span<const uint8_t> w, HugeArena& arena) {
  if (!huge_pages_available() || w.size() < kMinHugePageCopy) return nullptr;
  auto block = arena.allocate(w.size());
  if (!block.ok() || !block->advised) return nullptr;  // no gain from a 4 KiB-page copy
  uint8_t* copy = block->data;
  constexpr size_t kSlice = HugeBuffer::kHugePage;
  pool.parallel_for(static_cast<int64_t>((w.size() + kSlice - 1) / kSlice), [&](int64_t t, int) {
    const size_t b = sz(t) * kSlice, n = std::min(kSlice, w.size() - b);
    std::memcpy(copy + b, w.data() + b, n);
    release_pages(w.data() + b, n);
  });
  release_pages(w.data(), w.size());  // the pages that straddled two slices
  return copy;
}

Status matmul_packed(ThreadPool& pool, Scratch& scratch, const PackedMatrix& w, const float* x,
                     int64_t m, float* y, ActSource src, const MatmulEpilogue* ep) {
  const auto& kr = w.kernels;
  const int64_t k = w.k, n = w.n;
  const auto q_row = ggml_row_bytes(kr.act_type, static_cast<uint64_t>(k));
  if (!q_row) return invalid_argument("matmul: K is not a multiple of the block size");
  const size_t a_row = kr.act_bytes(k);
  // Quantized and prepared once per activation node: a matmul after another over the same node
  // (q/k/v, gate/up) reuses the prepared rows, or at least the quantized ones.
  const void* qfn = reinterpret_cast<const void*>(kr.quantize_act);
  const void* pfn = reinterpret_cast<const void*>(kr.prepare_act);
  if (!scratch.act_packed_held.matches(src, pfn, k, m)) {
    if (scratch.act_packed.size() < a_row * sz(m)) scratch.act_packed.resize(a_row * sz(m));
    uint8_t* packed = scratch.act_packed.data();
    if (scratch.act_held.matches(src, qfn, k, m)) {
      const uint8_t* q = scratch.act.data();
      pool.parallel_for(m, [&](int64_t r, int) {
        kr.prepare_act(q + sz(r) * *q_row, k, packed + sz(r) * a_row);
      });
    } else {
      if (scratch.act.size() < *q_row * sz(m)) scratch.act.resize(*q_row * sz(m));
      uint8_t* q = scratch.act.data();
      pool.parallel_for(m, [&](int64_t r, int) {
        kr.quantize_act(x + r * k, q + sz(r) * *q_row, k);
        kr.prepare_act(q + sz(r) * *q_row, k, packed + sz(r) * a_row);
      });
      scratch.act_held = {src, qfn, k, m};
    }
    scratch.act_packed_held = {src, pfn, k, m};
  }
  const uint8_t* act = scratch.act_packed.data();

  const int64_t groups = (n + kern::kPackRows - 1) / kern::kPackRows;
  const int64_t per_task =
      m == 1 ? std::clamp<int64_t>(groups / (2 * pool.size()), 2, kGroupsPerTaskGemv)
      : m <= kFewCols
          ? std::clamp<int64_t>(groups / (4 * pool.size()), kGroupsPerTaskGemm, kGroupsPerTaskFew)
          : kGroupsPerTaskGemm;
  const size_t gb = kern::packed_group_bytes(w.type, k);
  const uint8_t* wd = w.data;
  for_each_matmul_task(
      pool, groups, per_task, m, [&](int64_t g0, int64_t ng, int64_t c0, int64_t nc) {
        const int64_t r0 = g0 * kern::kPackRows;
        const int64_t nr = std::min(ng * kern::kPackRows, n - r0);
        kr.gemm(k, wd + sz(g0) * gb, nr, act + sz(c0) * a_row, a_row, nc, y + c0 * n + r0, sz(n));
        if (ep != nullptr) apply_epilogue(*ep, y, n, r0, nr, c0, nc);
      });
  return {};
}

Result<bool> embedding_packed(ThreadPool& pool, const PackedMatrix& table,
                              std::span<const int32_t> ids, float* out) {
  const auto row = ggml_row_bytes(table.type, static_cast<uint64_t>(table.k));
  if (!row) return invalid_argument("embedding: row is not whole blocks");
  GENIEX_TRY(check_token_ids(ids, table.n));
  // The looked-up rows back in their own blocks, then embedding() over just those rows.
  std::vector<uint8_t> blocks(*row * ids.size());
  std::vector<int32_t> at(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) {
    if (!kern::unpack_row(table.type, table.k, table.data, ids[t], blocks.data() + t * *row)) {
      return false;
    }
    at[t] = static_cast<int32_t>(t);
  }
  GENIEX_TRY(
      embedding(pool, table.type, blocks, table.k, static_cast<int64_t>(ids.size()), at, out));
  return true;
}

// The choice is documented at its declaration (cpu_ops.h).
bool repack_enabled(GgmlType t, CpuRepack policy) {
  switch (policy) {
    case CpuRepack::kNone: return false;
    case CpuRepack::kAll: return true;
    case CpuRepack::kDefault: break;
  }
  if (t == GgmlType::kQ4_0 || t == GgmlType::kQ8_0 || t == GgmlType::kQ5_0) return true;
  // Q4_K: where the packed kernel is measured faster at every row count, x86 (bench_matmul:
  // 1.5-2x). The NEON Q4_Kx8 kernel takes one activation row at a time, unmeasured on
  // hardware: the row kernels stay there.
  static const bool q4_k = [] {
    const auto pk = kern::packed_kernels(GgmlType::kQ4_K);
    return pk.has_value() && kern::is_x86_simd(pk->isa);
  }();
  return t == GgmlType::kQ4_K && q4_k;
}

}  // namespace geniex::backends::cpu
