// Shared by the attention schedules (op_attention.cpp: F32/F16 caches with ggml's non-flash
// numerics; op_attention_blocks.cpp: Q8_0/Q4_0 caches with ggml's flash-attention numerics): the
// problem description, blocks of query rows, and the gather of the keys a block sees (masks,
// segments, row indirection). Internal to src/backends/cpu.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/vec_dot.h"

namespace geniex::backends::cpu::attn {

inline size_t sz(int64_t v) { return static_cast<size_t>(v); }

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Query rows (tokens x heads of a kv head) a tiled task aims for.
constexpr int64_t kTileRows = 16;
// At most this many query rows go to the split schedule (its scores are shared, rows x keys).
constexpr int64_t kMaxSplitRows = 64;
// Fewest keys in a chunk of the split schedule.
constexpr int64_t kMinChunk = 32;

// graph::ref::attention_visible, inline (it runs once per (token, key)).
inline bool visible(int32_t qp, int32_t kp, const graph::AttentionParams& p) {
  if (kp < 0) return false;
  if (p.causal && kp > qp) return false;
  if (p.sliding_window > 0 &&
      static_cast<int64_t>(qp) - static_cast<int64_t>(kp) >= p.sliding_window) {
    return false;
  }
  return true;
}

struct Problem {
  const Kernels* kr = nullptr;
  const geniex::cpu::DotKernels* dot = nullptr;  // Q8_0 / Q4_0 K: q quantizer and K x q8 dots
  const float* q = nullptr;
  KvView k, v;
  size_t k_head_bytes = 0, v_head_bytes = 0, q8_bytes = 0;  // one head's row (block K/V)
  int64_t d = 0, dv = 0, n_head = 0, n_kv_head = 0, n_q = 0, n_kv = 0, group = 0;
  std::span<const int32_t> q_pos, k_pos;
  const int32_t* k_rows = nullptr;  // list entry j is state row k_rows[j]; null: row j
  const int32_t* q_seg = nullptr;   // (begin, end) of the list entries query t sees; null: all
  graph::AttentionParams params;
  bool round_q = false, round_p = false;
  float* out = nullptr;
};

// A block of query rows: tokens [t0, t0 + n_tok) of the query heads of kv head kvh. Row
// r = tt * group + g is token t0 + tt, head kvh * group + g.
struct Rows {
  int64_t kvh = 0, t0 = 0, n_tok = 0;
};

// Bit tt set when token t0 + tt sees key list entry j (n_tok <= 64).
inline uint64_t visible_mask(const Problem& pb, const Rows& rows, int64_t j) {
  const int32_t kp = pb.k_pos[sz(j)];
  if (kp < 0) return 0;
  uint64_t mask = 0;
  for (int64_t tt = 0; tt < rows.n_tok; ++tt) {
    const int64_t t = rows.t0 + tt;
    if (pb.q_seg != nullptr && (j < pb.q_seg[2 * t] || j >= pb.q_seg[2 * t + 1])) continue;
    if (visible(pb.q_pos[sz(t)], kp, pb.params)) mask |= uint64_t{1} << tt;
  }
  return mask;
}

// The key list entries some row sees, in list order: their state rows in keys[] and their list
// indices in list[] (both as floats, exact below 2^24; list == keys when there is no k_rows),
// and, when masks is not null, their visible_mask()s in masks[]. Only the union of the rows'
// segments is scanned. Returns the count.
inline int64_t visible_keys(const Problem& pb, const Rows& rows, float* keys, float* list,
                            uint64_t* masks = nullptr) {
  int64_t lo = 0, hi = pb.n_kv;
  if (pb.q_seg != nullptr) {
    lo = pb.n_kv;
    hi = 0;
    for (int64_t t = rows.t0; t < rows.t0 + rows.n_tok; ++t) {
      lo = std::min<int64_t>(lo, pb.q_seg[2 * t]);
      hi = std::max<int64_t>(hi, pb.q_seg[2 * t + 1]);
    }
  }
  int64_t n = 0;
  for (int64_t j = lo; j < hi; ++j) {
    const uint64_t mask = visible_mask(pb, rows, j);
    if (mask == 0) continue;
    if (masks != nullptr) masks[n] = mask;
    keys[n] = static_cast<float>(pb.k_rows != nullptr ? pb.k_rows[j] : j);
    if (list != keys) list[n] = static_cast<float>(j);
    ++n;
  }
  return n;
}

inline float* out_row(const Problem& pb, const Rows& rows, int64_t r) {
  const int64_t t = rows.t0 + r / pb.group, h = rows.kvh * pb.group + r % pb.group;
  return pb.out + (t * pb.n_head + h) * pb.dv;
}

// Grows (never shrinks) a scratch vector to n floats.
inline float* grow(std::vector<float>& buf, int64_t n) {
  if (buf.size() < sz(n)) buf.resize(sz(n));
  return buf.data();
}

// Whether every query sees the same segment of the list (no q_seg: all do).
inline bool one_segment(const Problem& pb) {
  if (pb.q_seg == nullptr) return true;
  for (int64_t t = 1; t < pb.n_q; ++t) {
    if (pb.q_seg[2 * t] != pb.q_seg[0] || pb.q_seg[2 * t + 1] != pb.q_seg[1]) return false;
  }
  return true;
}

// The tiles of the tiled schedule, as (first query, count) pairs in `tiles`: runs of at most
// `tile` consecutive queries that share one segment, so that a tile of a batch of sequences
// (each with its own segment) reads only its own sequence's keys instead of the union of all.
// Returns the count.
inline int64_t segment_tiles(const Problem& pb, int64_t tile, std::vector<int64_t>& tiles) {
  tiles.clear();
  for (int64_t t = 0; t < pb.n_q;) {
    int64_t e = t + 1;
    while (e < pb.n_q && e - t < tile &&
           (pb.q_seg == nullptr ||
            (pb.q_seg[2 * e] == pb.q_seg[2 * t] && pb.q_seg[2 * e + 1] == pb.q_seg[2 * t + 1]))) {
      ++e;
    }
    tiles.push_back(t);
    tiles.push_back(e - t);
    t = e;
  }
  return static_cast<int64_t>(tiles.size() / 2);
}

// The number of key chunks of the split schedule for n visible keys: about two tasks per thread
// over all kv heads, at least kMinChunk keys per chunk.
inline int64_t split_chunks(const Problem& pb, int64_t n, int nt) {
  const int64_t target = nt > 1 ? 2 * static_cast<int64_t>(nt) : 1;
  return std::max<int64_t>(1, std::min(n / kMinChunk, (target + pb.n_kv_head - 1) / pb.n_kv_head));
}

/// Fewest keys for the dense schedule.
constexpr int64_t kDenseMinKeys = 256;

/// Whether the dense schedule (op_attention_dense.cpp) takes the problem: non-causal, no window,
/// no soft-cap, F32 K and V, no paging, at least kDenseMinKeys keys, every key slot filled.
bool dense_eligible(const Problem& pb);
/// The dense schedule: K packed once per kv head, scores as an outer-product GEMM.
void run_dense(const Problem& pb, ThreadPool& pool, Scratch& scratch);

/// Q8_0 / Q4_0 K and V (op_attention_blocks.cpp): the tiled schedule, and the split schedule
/// over nt threads.
void run_blocks_tiled(const Problem& pb, ThreadPool& pool, Scratch& scratch);
void run_blocks_split(const Problem& pb, ThreadPool& pool, Scratch& scratch, int nt);

}  // namespace geniex::backends::cpu::attn
