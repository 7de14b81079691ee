// Matmul and embedding on the CPU: activations quantized once per row to the weight type's
// partner type (as ggml does), then the dispatched SIMD gemm over tiles of weight rows x
// activation rows, spread over the thread pool.
#include <algorithm>
#include <string>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "backends/cpu/matmul_tasks.h"
#include "quant/quant.h"

namespace geniex::backends::cpu {
namespace {

// Weight rows per task. GEMV (one activation row) streams weights at memory bandwidth and wants
// long contiguous runs per task for the hardware prefetcher (16-row tasks measured 25 % slower
// on the 262k-row LM head than 256-row ones); GEMM is insensitive to the tile, so the task only
// has to amortize scheduling.
constexpr int64_t kRowsPerTaskGemv = 256;
constexpr int64_t kRowsPerTaskGemm = 64;
// Activation rows per task of an F16 GEMM with many rows: its kernel widens each weight row to
// F32 once per task (kernels' gemm_f16), so longer activation tiles amortize that (64 -> 256 rows:
// the widening fell from 12 % to 3 % of a 1024-row vision encoder's matmul time).
constexpr int64_t kColsPerTileF16 = 256;

size_t sz(int64_t v) { return static_cast<size_t>(v); }

}  // namespace

Status matmul(ThreadPool& pool, Scratch& scratch, GgmlType wtype, std::span<const uint8_t> w,
              int64_t k, int64_t n, const float* x, int64_t m, float* y, ActSource src,
              const MatmulEpilogue* ep) {
  const auto kernels = ::geniex::cpu::dot_kernels(wtype);
  if (!kernels) {
    return unimplemented("matmul: no CPU kernel for weight type " +
                         std::string(ggml_type_name(wtype)));
  }
  const auto w_row = ggml_row_bytes(wtype, static_cast<uint64_t>(k));
  const auto a_row = ggml_row_bytes(kernels->act_type, static_cast<uint64_t>(k));
  if (!w_row || !a_row) return invalid_argument("matmul: K is not a multiple of the block size");
  if (w.size() < *w_row * sz(n)) return invalid_argument("matmul: weight buffer too small");

  // Quantize every activation row once (or not at all when the last matmul read the same node).
  const auto quantize = kernels->quantize_act;
  const void* qfn = reinterpret_cast<const void*>(quantize);
  if (!scratch.act_held.matches(src, qfn, k, m)) {
    if (scratch.act.size() < *a_row * sz(m)) scratch.act.resize(*a_row * sz(m));
    uint8_t* q = scratch.act.data();
    pool.parallel_for(m, [&](int64_t r, int) { quantize(x + r * k, q + sz(r) * *a_row, k); });
    scratch.act_held = {src, qfn, k, m};
  }
  const uint8_t* act = scratch.act.data();

  // Small GEMVs still get two tasks per thread so no core idles.
  const int64_t rows_per_task =
      m == 1 ? std::clamp<int64_t>(n / (2 * pool.size()), 16, kRowsPerTaskGemv) : kRowsPerTaskGemm;
  const auto gemm = kernels->gemm;
  const size_t wr = *w_row, ar = *a_row;
  const int64_t cols_per_tile =
      wtype == GgmlType::kF16 && m >= 2 * kColsPerTileF16 ? kColsPerTileF16 : kMatmulColsPerTile;
  for_each_matmul_task(
      pool, n, rows_per_task, m,
      [&](int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
        gemm(k, w.data() + sz(r0) * wr, wr, nr, act + sz(c0) * ar, ar, nc, y + c0 * n + r0, sz(n));
        if (ep != nullptr) apply_epilogue(*ep, y, n, r0, nr, c0, nc);
      },
      cols_per_tile);
  return {};
}

Status check_token_ids(std::span<const int32_t> ids, int64_t n_vocab) {
  for (int32_t id : ids) {
    if (id < 0 || id >= n_vocab) {
      return out_of_range("embedding: token id " + std::to_string(id) + " outside [0, " +
                          std::to_string(n_vocab) + ")");
    }
  }
  return {};
}

Status embedding(ThreadPool& pool, GgmlType type, std::span<const uint8_t> table, int64_t n_embd,
                 int64_t n_vocab, std::span<const int32_t> ids, float* out) {
  const auto row = ggml_row_bytes(type, static_cast<uint64_t>(n_embd));
  if (!row) return invalid_argument("embedding: row is not whole blocks");
  GENIEX_TRY(check_token_ids(ids, n_vocab));
  Status first_error;
  pool.parallel_for(static_cast<int64_t>(ids.size()), [&](int64_t t, int) {
    Status s = quant::dequantize_row(type, table.subspan(sz(ids[sz(t)]) * *row, *row),
                                     std::span<float>(out + t * n_embd, sz(n_embd)));
    if (!s.ok() && t == 0) first_error = s;  // same type for every row: row 0 reports it
  });
  return first_error;
}

}  // namespace geniex::backends::cpu
