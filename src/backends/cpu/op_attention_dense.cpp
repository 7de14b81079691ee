// The dense attention schedule: long non-causal problems over F32 K and V in which every query
// sees every key (a vision encoder's self-attention: no mask, no window, no soft-cap, no paging,
// no empty slot). op_attention.cpp picks it for such problems whatever their number of queries.
//
// Each kv head's K is first packed once into panels of kDenseKeys keys (element-major within a
// panel, zero-padded past the last key), so the scores of a block of query rows are an
// outer-product GEMM (Kernels::dense_scores: a broadcast query element times a vector of keys,
// no horizontal sums) instead of one dot product per (row, key). Then per row: the maximum, the
// exponentials summed in double and the scaling by 1 / sum (the same kernels and numerics as the
// other F32 schedules), and p.v over V
// copied head by head next to each other. No rounding to f16 anywhere (F32 K and V).
//
// Every score is one multiply-add chain over the head's elements in order, so a row's result
// depends only on the row, the keys and the instruction set: not on its tile, the thread count
// or the other queries of the call.
#include <algorithm>
#include <cstring>

#include "backends/cpu/attention_problem.h"

namespace geniex::backends::cpu::attn {
namespace {

// Query tokens of a task (times the group: its rows).
constexpr int64_t kDenseTileRows = 64;

// K of kv head kvh packed for dense_scores: panel b, element i, key j at
// dst[(b * d + i) * kDenseKeys + j]; keys past n_kv are zero.
void pack_head(const Problem& pb, int64_t kvh, int64_t n_panels, float* dst) {
  const auto* k = reinterpret_cast<const float*>(pb.k.data);
  const int64_t stride = pb.n_kv_head * pb.d;
  std::fill(dst, dst + n_panels * pb.d * kDenseKeys, 0.0f);
  for (int64_t m = 0; m < pb.n_kv; ++m) {
    const float* row = k + m * stride + kvh * pb.d;
    float* col = dst + (m / kDenseKeys) * pb.d * kDenseKeys + m % kDenseKeys;
    for (int64_t i = 0; i < pb.d; ++i) col[i * kDenseKeys] = row[i];
  }
}

}  // namespace

bool dense_eligible(const Problem& pb) {
  const graph::AttentionParams& p = pb.params;
  if (p.causal || p.sliding_window > 0 || p.softcap > 0.0f) return false;
  if (pb.k.type != GgmlType::kF32 || pb.v.type != GgmlType::kF32) return false;
  if (pb.k_rows != nullptr || pb.q_seg != nullptr || pb.n_kv < kDenseMinKeys) return false;
  return std::all_of(pb.k_pos.begin(), pb.k_pos.end(), [](int32_t kp) { return kp >= 0; });
}

void run_dense(const Problem& pb, ThreadPool& pool, Scratch& scratch) {
  const int64_t n_panels = (pb.n_kv + kDenseKeys - 1) / kDenseKeys;
  const int64_t ns = n_panels * kDenseKeys;  // score row stride
  const int64_t head_floats = ns * pb.d;
  const int64_t v_floats = pb.n_kv * pb.dv;
  // The slot after the threads' own holds what every task reads: each head's packed K and its V
  // rows side by side (row m of a head's copy is key m), and the key indices.
  float* packed =
      grow(scratch.per_thread[sz(pool.size())], pb.n_kv_head * (head_floats + v_floats) + pb.n_kv);
  float* v_heads = packed + pb.n_kv_head * head_floats;
  float* iota = v_heads + pb.n_kv_head * v_floats;
  for (int64_t m = 0; m < pb.n_kv; ++m) iota[m] = static_cast<float>(m);
  const auto* v = reinterpret_cast<const float*>(pb.v.data);
  pool.parallel_for(pb.n_kv_head, [&](int64_t kvh, int) {
    pack_head(pb, kvh, n_panels, packed + kvh * head_floats);
    float* vh = v_heads + kvh * v_floats;
    for (int64_t m = 0; m < pb.n_kv; ++m) {
      const float* row = v + (m * pb.n_kv_head + kvh) * pb.dv;
      std::copy(row, row + pb.dv, vh + m * pb.dv);
    }
  });

  const int64_t tile = std::max<int64_t>(1, kDenseTileRows / pb.group);
  const int64_t n_tiles = (pb.n_q + tile - 1) / tile;
  // Head-major: the threads work through one head's tiles together, its K and V hot in cache.
  pool.parallel_for(n_tiles * pb.n_kv_head, [&](int64_t task, int thread) {
    const int64_t t0 = (task % n_tiles) * tile;
    const Rows rows{task / n_tiles, t0, std::min(tile, pb.n_q - t0)};
    const int64_t n_rows = rows.n_tok * pb.group;
    float* qr = grow(scratch.per_thread[sz(thread)], n_rows * (pb.d + pb.dv + ns));
    float* acc = qr + n_rows * pb.d;
    float* s = acc + n_rows * pb.dv;
    for (int64_t tt = 0; tt < rows.n_tok; ++tt) {
      const float* src = pb.q + ((t0 + tt) * pb.n_head + rows.kvh * pb.group) * pb.d;
      std::memcpy(qr + tt * pb.group * pb.d, src, sz(pb.group * pb.d) * sizeof(float));
    }
    const float* kp = packed + rows.kvh * head_floats;
    for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kMaxRows, n_rows - r0));
      pb.kr->dense_scores(qr + r0 * pb.d, nr, pb.d, kp, n_panels, pb.params.scale, s + r0 * ns, ns);
    }
    for (int64_t r = 0; r < n_rows; ++r) {
      float* sr = s + r * ns;
      const double sum = pb.kr->softmax_exp(sr, pb.n_kv, pb.kr->row_max(sr, pb.n_kv));
      pb.kr->scale(sr, pb.n_kv, static_cast<float>(1.0 / sum), false);
    }
    std::fill(acc, acc + n_rows * pb.dv, 0.0f);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kMaxRows, n_rows - r0));
      pb.kr->pv_f32(s + r0 * ns, ns, nr, iota, 0, pb.n_kv, v_heads + rows.kvh * v_floats, pb.dv,
                    pb.dv, acc + r0 * pb.dv, pb.dv);
    }
    for (int64_t r = 0; r < n_rows; ++r) {
      std::copy(acc + r * pb.dv, acc + (r + 1) * pb.dv, out_row(pb, rows, r));
    }
  });
}

}  // namespace geniex::backends::cpu::attn
