// Attention on the CPU over a Q8_0 / Q4_0 KV cache, with llama.cpp's CPU flash-attention numerics
// (graph::ref::attention_blocks is the contract): each query row (token, head) is quantized to
// Q8_0 once; per visible key, in list order, the score is the quantized dot k_row . q8 (the
// dispatched kernels of kernels/vec_dot.h) times scale (cap * tanh when soft-capped), then an f32
// online softmax: a new maximum rescales the row's accumulator and sum by expf(M_old - M), a
// smaller score adds with weight expf(s - M); V rows are dequantized to f32 once per key and kv
// head and added to every query row of the block (attention_kernels pv_f32); the output is
// acc * (1 / S). Keys that no row of a block sees (masks, segments) are never read.
//
// Schedules, as for F32/F16 (op_attention.cpp):
// * tiled (prefill): a task is (kv head, tile of query tokens); every row of the task runs its
//   online softmax over all its keys, in order: the same operations as the reference, up to the
//   summation order inside a dot and FMA contraction.
// * split (decode): the visible keys are cut into chunks; a task is (kv head, chunk) and leaves
//   a partial (M, S, acc) per row; the partials are merged in chunk order as ggml merges its
//   split-KV partials (ggml_flash_attn_ext_reduce_partials): M = max, each side scaled by
//   expf(M_side - M). One chunk reproduces the single pass exactly.
// Scores are computed for a block of up to kKeyBlock keys at a time, one gemm call per run of
// consecutive state rows, so a contiguous cache is read as long streams.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/attention_problem.h"

namespace geniex::backends::cpu::attn {
namespace {

constexpr int64_t kKeyBlock = 32;

// Per-row running state of the online softmax: maximum, sum and accumulator [dv].
struct Online {
  float* m = nullptr;
  float* s = nullptr;
  float* acc = nullptr;
};

// Floats of attend()'s work area for a block of n_rows query rows: scores / weights, the key
// block's dequantized V rows, local key indices and pending rescale factors.
int64_t work_floats(const Problem& pb, int64_t n_rows) {
  return n_rows * kKeyBlock + kKeyBlock * pb.dv + kKeyBlock + n_rows;
}

// Floats that hold n_rows quantized query rows.
int64_t q8_floats(const Problem& pb, int64_t n_rows) {
  return static_cast<int64_t>((pb.q8_bytes * sz(n_rows) + sizeof(float) - 1) / sizeof(float));
}

// Quantizes the block's query rows (row r = token t0 + r / group, head kvh * group + r % group)
// to the K type's partner type.
void quantize_queries(const Problem& pb, const Rows& rows, uint8_t* q8) {
  const int64_t n_rows = rows.n_tok * pb.group;
  for (int64_t r = 0; r < n_rows; ++r) {
    const int64_t t = rows.t0 + r / pb.group, h = rows.kvh * pb.group + r % pb.group;
    pb.dot->quantize_act(pb.q + (t * pb.n_head + h) * pb.d, q8 + sz(r) * pb.q8_bytes, pb.d);
  }
}

void init_online(const Online& o, int64_t n_rows, int64_t dv) {
  std::fill(o.m, o.m + n_rows, kNegInf);
  std::fill(o.s, o.s + n_rows, 0.0f);
  std::fill(o.acc, o.acc + n_rows * dv, 0.0f);
}

// Adds keys [a, b) of the current key block (weights w[r * kKeyBlock + m], V rows vb[m * dv])
// to every row's accumulator, in key order.
void add_values(const Problem& pb, int64_t n_rows, const float* w, const float* local, int64_t a,
                int64_t b, const float* vb, float* acc) {
  if (a == b) return;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kMaxRows, n_rows - r0));
    // Rows of other sequences (segments) or masked positions weigh these keys 0: skip them.
    bool any = false;
    for (int i = 0; i < nr && !any; ++i) {
      const float* wr = w + (r0 + i) * kKeyBlock;
      any = std::any_of(wr + a, wr + b, [](float x) { return x != 0.0f; });
    }
    if (!any) continue;
    pb.kr->pv_f32(w + r0 * kKeyBlock, kKeyBlock, nr, local, a, b, vb, pb.dv, pb.dv,
                  acc + r0 * pb.dv, pb.dv);
  }
}

// Runs the online softmax of the block's rows over visible keys [m0, m1) (state rows keys[m],
// the rows seeing each in masks[m], from visible_keys()). Keys go
// in blocks of kKeyBlock: scores by gemm, then the scalar recurrence per key and row, which turns
// the scores into weights; the weighted V rows are added a run of keys at a time (accumulators
// stay in registers) and a run ends where some row's maximum grows, so that row's accumulator is
// rescaled exactly between the same two keys as in the reference.
void attend(const Problem& pb, const Rows& rows, const uint8_t* q8, const float* keys,
            const uint64_t* masks, int64_t m0, int64_t m1, float* work, const Online& o) {
  const int64_t n_rows = rows.n_tok * pb.group;
  const size_t k_stride = sz(pb.n_kv_head) * pb.k_head_bytes;  // bytes per state row
  const size_t v_stride = sz(pb.n_kv_head) * pb.v_head_bytes;
  const uint8_t* k_base = pb.k.data + sz(rows.kvh) * pb.k_head_bytes;
  const uint8_t* v_base = pb.v.data + sz(rows.kvh) * pb.v_head_bytes;
  const auto dequant = pb.v.type == GgmlType::kQ8_0 ? pb.kr->dequant_q8_0 : pb.kr->dequant_q4_0;
  const auto& prm = pb.params;
  // ggml folds the cap into the scale: s = cap * tanhf(dot * (scale / cap)).
  const float scale = prm.softcap > 0.0f ? prm.scale / prm.softcap : prm.scale;
  float* w = work;                        // [row][kKeyBlock]: scores, then weights
  float* vb = w + n_rows * kKeyBlock;     // [kKeyBlock][dv]: dequantized V rows
  float* local = vb + kKeyBlock * pb.dv;  // [kKeyBlock]: 0, 1, 2, ... (rows of vb)
  float* rescale = local + kKeyBlock;     // [row]: pending factor, 1 when none
  for (int64_t i = 0; i < kKeyBlock; ++i) local[i] = static_cast<float>(i);
  for (int64_t b0 = m0; b0 < m1; b0 += kKeyBlock) {
    const int64_t nb = std::min(m1 - b0, kKeyBlock);
    for (int64_t m = 0; m < nb;) {  // one gemm per run of consecutive state rows
      int64_t e = m + 1;
      while (e < nb && keys[b0 + e] == keys[b0 + e - 1] + 1.0f) ++e;
      pb.dot->gemm(pb.d, k_base + static_cast<size_t>(keys[b0 + m]) * k_stride, k_stride, e - m, q8,
                   pb.q8_bytes, n_rows, w + m, kKeyBlock);
      m = e;
    }
    for (int64_t m = 0; m < nb; ++m) {
      dequant(v_base + static_cast<size_t>(keys[b0 + m]) * v_stride, vb + m * pb.dv, pb.dv);
    }
    int64_t run = 0;  // keys [run, m) of this block are weighted but not yet added
    for (int64_t m = 0; m < nb; ++m) {
      const uint64_t mask = masks[b0 + m];
      bool any_rescale = false;
      for (int64_t r = 0; r < n_rows; ++r) {
        float& x = w[r * kKeyBlock + m];
        rescale[r] = 1.0f;
        if (((mask >> (r / pb.group)) & 1u) == 0) {
          x = 0.0f;  // adds 0 * v: the accumulator keeps its value
          continue;
        }
        float s = x * scale;
        if (prm.softcap > 0.0f) s = prm.softcap * std::tanh(s);
        float ms = 1.0f, vs = 1.0f;
        if (s > o.m[r]) {
          ms = std::exp(o.m[r] - s);
          // Before the first key the accumulator is all zeros: scaling it changes nothing.
          if (o.m[r] != kNegInf && ms != 1.0f) {
            rescale[r] = ms;
            any_rescale = true;
          }
          o.m[r] = s;
        } else {
          vs = std::exp(s - o.m[r]);
        }
        o.s[r] = o.s[r] * ms + vs;
        x = vs;
      }
      if (any_rescale) {
        add_values(pb, n_rows, w, local, run, m, vb, o.acc);
        run = m;
        for (int64_t r = 0; r < n_rows; ++r) {
          if (rescale[r] != 1.0f) pb.kr->scale(o.acc + r * pb.dv, pb.dv, rescale[r], false);
        }
      }
    }
    add_values(pb, n_rows, w, local, run, nb, vb, o.acc);
  }
}

// out = acc * (1 / S) per row (zeros when the row saw no key).
void finish_rows(const Problem& pb, const Rows& rows, const Online& o) {
  const int64_t n_rows = rows.n_tok * pb.group;
  for (int64_t r = 0; r < n_rows; ++r) {
    float* dst = out_row(pb, rows, r);
    const float inv = o.s[r] == 0.0f ? 0.0f : 1.0f / o.s[r];
    std::copy(o.acc + r * pb.dv, o.acc + (r + 1) * pb.dv, dst);
    pb.kr->scale(dst, pb.dv, inv, false);
  }
}

void tiled_task(const Problem& pb, const Rows& rows, std::vector<float>& buf,
                std::vector<uint64_t>& mbuf) {
  const int64_t n_rows = rows.n_tok * pb.group;
  float* keys = grow(
      buf, 2 * pb.n_kv + n_rows * (2 + pb.dv) + work_floats(pb, n_rows) + q8_floats(pb, n_rows));
  float* list = pb.k_rows != nullptr ? keys + pb.n_kv : keys;
  float* state = keys + 2 * pb.n_kv;
  const Online o{state, state + n_rows, state + 2 * n_rows};
  float* work = o.acc + n_rows * pb.dv;
  auto* q8 = reinterpret_cast<uint8_t*>(work + work_floats(pb, n_rows));
  init_online(o, n_rows, pb.dv);
  if (mbuf.size() < sz(pb.n_kv)) mbuf.resize(sz(pb.n_kv));
  const int64_t n = visible_keys(pb, rows, keys, list, mbuf.data());
  if (n > 0) {
    quantize_queries(pb, rows, q8);
    attend(pb, rows, q8, keys, mbuf.data(), 0, n, work, o);
  }
  finish_rows(pb, rows, o);
}

}  // namespace

void run_blocks_tiled(const Problem& pb, ThreadPool& pool, Scratch& scratch) {
  const int64_t tile = std::min(pb.n_q, std::max<int64_t>(1, kTileRows / pb.group));
  const int64_t n_tiles = segment_tiles(pb, tile, scratch.tiles);
  const int64_t* tiles = scratch.tiles.data();
  pool.parallel_for(n_tiles * pb.n_kv_head, [&](int64_t task, int thread) {
    const int64_t ti = n_tiles - 1 - task / pb.n_kv_head;  // later tiles (more keys) first
    Rows rows{task % pb.n_kv_head, tiles[2 * ti], tiles[2 * ti + 1]};
    tiled_task(pb, rows, scratch.per_thread[sz(thread)], scratch.masks[sz(thread)]);
  });
}

void run_blocks_split(const Problem& pb, ThreadPool& pool, Scratch& scratch, int nt) {
  const int64_t n_rows = pb.n_q * pb.group;  // per kv head
  const int64_t all_rows = pb.n_kv_head * n_rows;
  auto& buf = scratch.per_thread[sz(nt)];
  auto& mbuf = scratch.masks[sz(nt)];
  if (mbuf.size() < sz(pb.n_kv)) mbuf.resize(sz(pb.n_kv));
  float* keys = grow(buf, 2 * pb.n_kv);
  float* list = pb.k_rows != nullptr ? keys + pb.n_kv : keys;
  const int64_t n = visible_keys(pb, Rows{0, 0, pb.n_q}, keys, list, mbuf.data());
  const int64_t n_chunks = n == 0 ? 1 : split_chunks(pb, n, nt);
  // [kvh] quantized queries, then [chunk][kvh][row] partials (M, S, acc[dv]).
  const int64_t q8_all = q8_floats(pb, all_rows);
  const int64_t part = 2 + pb.dv;
  keys = grow(buf, 2 * pb.n_kv + q8_all + n_chunks * all_rows * part);
  auto* q8 = reinterpret_cast<uint8_t*>(keys + 2 * pb.n_kv);
  float* partials = keys + 2 * pb.n_kv + q8_all;
  for (int64_t kvh = 0; kvh < pb.n_kv_head; ++kvh) {
    quantize_queries(pb, Rows{kvh, 0, pb.n_q}, q8 + sz(kvh * n_rows) * pb.q8_bytes);
  }
  auto chunk_begin = [&](int64_t c) { return n * c / n_chunks; };
  pool.parallel_for(pb.n_kv_head * n_chunks, [&](int64_t task, int thread) {
    const int64_t kvh = task / n_chunks, c = task % n_chunks;
    const Rows rows{kvh, 0, pb.n_q};
    float* work =
        grow(scratch.per_thread[sz(thread)], n_rows * (2 + pb.dv) + work_floats(pb, n_rows));
    const Online o{work, work + n_rows, work + 2 * n_rows};
    init_online(o, n_rows, pb.dv);
    attend(pb, rows, q8 + sz(kvh * n_rows) * pb.q8_bytes, keys, mbuf.data(), chunk_begin(c),
           chunk_begin(c + 1), o.acc + n_rows * pb.dv, o);
    float* dst = partials + (c * pb.n_kv_head + kvh) * n_rows * part;
    for (int64_t r = 0; r < n_rows; ++r) {
      dst[r * part] = o.m[r];
      dst[r * part + 1] = o.s[r];
      std::copy(o.acc + r * pb.dv, o.acc + (r + 1) * pb.dv, dst + r * part + 2);
    }
  });
  pool.parallel_for(all_rows, [&](int64_t row, int) {
    const int64_t kvh = row / n_rows, r = row % n_rows;
    float* o = out_row(pb, Rows{kvh, 0, pb.n_q}, r);
    std::fill(o, o + pb.dv, 0.0f);
    float m = kNegInf, s = 0.0f;
    for (int64_t c = 0; c < n_chunks; ++c) {
      const float* pc = partials + ((c * pb.n_kv_head + kvh) * n_rows + r) * part;
      if (pc[1] == 0.0f) continue;
      const float m_new = std::max(m, pc[0]);
      const float scale_old = std::exp(m - m_new), scale_new = std::exp(pc[0] - m_new);
      for (int64_t i = 0; i < pb.dv; ++i) o[i] = o[i] * scale_old + pc[2 + i] * scale_new;
      s = s * scale_old + pc[1] * scale_new;
      m = m_new;
    }
    if (s != 0.0f) pb.kr->scale(o, pb.dv, 1.0f / s, false);
  });
}

}  // namespace geniex::backends::cpu::attn
