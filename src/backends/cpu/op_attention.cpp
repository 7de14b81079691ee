// Attention on the CPU over an F32 or F16 KV cache (Q8_0 / Q4_0 caches: op_attention_blocks.cpp,
// which shares the problem set-up, the key gather and the choice of schedule made here).
//
// Numerics follow ggml's non-flash CPU path (what llama.cpp runs by default without flash
// attention), so that greedy outputs track llama.cpp's: with an F16 cache the query is rounded
// to f16 before Q.K, scores are scaled (and soft-capped) in f32, softmax sums in double, and the
// probabilities are rounded to f16 before they weight V. With an F32 cache nothing is rounded.
// In detail, per (query, head): s_j = scale(q.k_j) in f32 for every visible key j; mx = max s_j;
// e_j = exp(s_j - mx) (kernels/exp_simd.h, within 2 ULP of the exact value); sum = sum of e_j
// in double (lane-wise partial sums); p_j = e_j * (float)(1 / sum),
// rounded to f16 with an F16 V cache; out = sum_j p_j v_j accumulated in f32. Only the float
// summation order of the dots and of the p.v sums (and FMA contraction) is left to the kernels.
//
// The cache is read in place (F16 rows converted in registers, attention_kernels*.cpp), and only
// keys visible to some query of a block are touched: empty slots (k_pos -1), keys after a causal
// query, keys outside a sliding window and keys outside every query's segment are never read.
//
// Paged addressing: key list entry j lives in state row k_rows[j] (identity without k_rows), and
// with q_seg query t sees only entries in [q_seg[2t], q_seg[2t+1]). Each block of query rows
// first gathers the list entries some row sees (scanning only the union of its segments) as
// (state row, list index) pairs; the kernels then read rows through that list, so a scattered
// layout costs nothing beyond the gather and gives the same bits as the contiguous one. Rows and
// segments are validated (kOutOfRange) before anything is read.
//
// Two schedules (and a third for long non-causal problems where every key is visible to every
// query, over F32 K and V: op_attention_dense.cpp's):
// * tiled (prefill, and a batched decode step): a task is (kv head, tile of queries); all query
//   heads of the kv head for the tile's tokens share every K/V row read. Scores, softmax and p.v
//   run in the task. A tile never spans two segments (sequences), so it reads only its own keys.
// * split (decode of one sequence, few query rows; over Q8_0 / Q4_0 caches only where the tiled
//   schedule would leave threads idle): token-major over F32 / F16 caches. A key's cache row
//   holds every kv head (n_kv_head * d elements); reading one head's slice of each row (128
//   bytes every 1 KiB for 8 heads of 64) left the hardware prefetcher nothing to follow, so the
//   kernels read each key's row for all heads at once (Kernels::head_dots / pv_heads): scores by
//   chunk of keys, then the softmax of each row over all its keys (the f16 rounding of p needs
//   the final normalizer), then p.v by runs of kv heads, each summing all keys in order (so every
//   element is the tiled schedule's sum whatever the thread count).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/attention_problem.h"
#include "backends/cpu/cpu_ops.h"
#include "core/fp16.h"
#include "graph/ref_ops.h"

namespace geniex::backends::cpu {
namespace attn {
namespace {

// The most floats (K and V rows together) a tiled task copies out of the cache (8 MiB).
constexpr int64_t kMaxGatherFloats = int64_t{1} << 21;
// Query rows of a tile of a long non-causal problem (at most 64 tokens: the key masks' bits), and
// the fewest keys for it.
constexpr int64_t kWideTileRows = 64;
constexpr int64_t kWideTileMinKeys = 256;

// The rows' queries, rounded to f16 with an F16 K cache.
void load_queries(const Problem& pb, const Rows& rows, float* qr) {
  for (int64_t tt = 0; tt < rows.n_tok; ++tt) {
    const float* src = pb.q + ((rows.t0 + tt) * pb.n_head + rows.kvh * pb.group) * pb.d;
    float* dst = qr + tt * pb.group * pb.d;
    const int64_t n = pb.group * pb.d;
    std::memcpy(dst, src, sz(n) * sizeof(float));
    if (pb.round_q) pb.kr->scale(dst, n, 1.0f, true);  // x * 1 == x: just the rounding
  }
}

// Where a kv head's K (or V) rows are read: row keys[m] (in elements of the cache type) starts at
// data + keys[m] * stride. The cache itself (stride n_kv_head * d), or a tile's gathered copy.
struct HeadRows {
  const void* data;
  int64_t stride;
  const float* keys;
};

HeadRows cache_rows(const KvView& kv, int64_t kvh, int64_t d, int64_t n_kv_head,
                    const float* keys) {
  const size_t esz = kv.type == GgmlType::kF16 ? 2 : 4;
  return {kv.data + sz(kvh * d) * esz, n_kv_head * d, keys};
}

// One row's raw dots sr[m], m in [m0, m1), to scaled (and soft-capped) scores, kNegInf where
// token tt of the row does not see key m; returns max(best, those scores).
float mask_and_scale(const Problem& pb, const uint64_t* masks, int64_t tt, int64_t m0, int64_t m1,
                     float* sr, float best) {
  const auto& prm = pb.params;
  const bool softcap = prm.softcap > 0.0f;
  for (int64_t m = m0; m < m1; ++m) {
    if (((masks[m] >> tt) & 1u) == 0) {
      sr[m] = kNegInf;
      continue;
    }
    const float score =
        softcap ? prm.softcap * std::tanh(sr[m] * prm.scale / prm.softcap) : sr[m] * prm.scale;
    sr[m] = score;
    best = std::max(best, score);
  }
  return best;
}

// s[r * ns + m] = the scaled score of row r and the m-th visible key (K row kr.keys[m], rows
// seeing it in masks[m]; kNegInf if r does not see it) for m in [m0, m1); mx[r] = max(mx[r],
// those scores). All dots of a row block first (one kernel call), then masks and scaling.
void scores(const Problem& pb, const Rows& rows, const float* qr, const HeadRows& kr,
            const uint64_t* masks, int64_t m0, int64_t m1, float* s, int64_t ns, float* mx) {
  const int64_t n_rows = rows.n_tok * pb.group;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kMaxRows, n_rows - r0));
    if (pb.k.type == GgmlType::kF16) {
      pb.kr->dots_f16(qr + r0 * pb.d, nr, pb.d, static_cast<const uint16_t*>(kr.data), kr.stride,
                      kr.keys, m0, m1, s + r0 * ns, ns);
    } else {
      pb.kr->dots_f32(qr + r0 * pb.d, nr, pb.d, static_cast<const float*>(kr.data), kr.stride,
                      kr.keys, m0, m1, s + r0 * ns, ns);
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    mx[r] = mask_and_scale(pb, masks, r / pb.group, m0, m1, s + r * ns, mx[r]);
  }
}

// Scores -> probabilities in place for one row of n keys with maximum mx. False (and all-zero p)
// when the row sees no key.
bool softmax_row(const Problem& pb, float* s, int64_t n, float mx) {
  if (mx == kNegInf) {
    std::fill(s, s + n, 0.0f);
    return false;
  }
  const double sum = pb.kr->softmax_exp(s, n, mx);
  pb.kr->scale(s, n, static_cast<float>(1.0 / sum), pb.round_p);
  return true;
}

// acc[r * dv + i] += sum over m in [m0, m1), in that order, of p[r * ns + m] * v[keys[m]][i]
// for value elements i in [d0, d1) (acc rows keep their full dv stride).
void weighted_v_slice(const Problem& pb, const Rows& rows, const float* p, int64_t ns,
                      const HeadRows& vr, int64_t m0, int64_t m1, float* acc, int64_t d0,
                      int64_t d1) {
  const int64_t n_rows = rows.n_tok * pb.group;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kMaxRows, n_rows - r0));
    if (pb.v.type == GgmlType::kF16) {
      pb.kr->pv_f16(p + r0 * ns, ns, nr, vr.keys, m0, m1,
                    static_cast<const uint16_t*>(vr.data) + d0, vr.stride, d1 - d0,
                    acc + r0 * pb.dv + d0, pb.dv);
    } else {
      pb.kr->pv_f32(p + r0 * ns, ns, nr, vr.keys, m0, m1, static_cast<const float*>(vr.data) + d0,
                    vr.stride, d1 - d0, acc + r0 * pb.dv + d0, pb.dv);
    }
  }
}

// The visible K (or V) rows of kv head kvh, copied bit for bit to dst one after another (row m
// of the copy is cache row keys[m]); iota holds 0 .. n-1 to address them.
HeadRows gather_rows(const KvView& kv, int64_t kvh, int64_t d, int64_t n_kv_head, const float* keys,
                     int64_t n, const float* iota, void* dst) {
  const HeadRows src = cache_rows(kv, kvh, d, n_kv_head, keys);
  const size_t esz = kv.type == GgmlType::kF16 ? 2 : 4;
  const auto* from = static_cast<const uint8_t*>(src.data);
  auto* to = static_cast<uint8_t*>(dst);
  for (int64_t m = 0; m < n; ++m) {
    std::memcpy(to + sz(m * d) * esz, from + sz(static_cast<int64_t>(keys[m]) * src.stride) * esz,
                sz(d) * esz);
  }
  return {dst, d, iota};
}

// One task of the tiled schedule: everything for a block of rows, in the thread's scratch.
void tiled_task(const Problem& pb, const Rows& rows, std::vector<float>& buf,
                std::vector<uint64_t>& mbuf) {
  const int64_t n_rows = rows.n_tok * pb.group;
  float* qr = grow(buf, n_rows * (pb.d + pb.dv + 1 + pb.n_kv) + 2 * pb.n_kv);
  float* acc = qr + n_rows * pb.d;
  float* mx = acc + n_rows * pb.dv;
  float* keys = mx + n_rows;
  float* list = pb.k_rows != nullptr ? keys + pb.n_kv : keys;
  float* s = keys + 2 * pb.n_kv;
  if (mbuf.size() < sz(pb.n_kv)) mbuf.resize(sz(pb.n_kv));
  const int64_t n = visible_keys(pb, rows, keys, list, mbuf.data());
  std::fill(mx, mx + n_rows, kNegInf);
  if (n > 0) {
    HeadRows kr = cache_rows(pb.k, rows.kvh, pb.d, pb.n_kv_head, keys);
    HeadRows vr = cache_rows(pb.v, rows.kvh, pb.dv, pb.n_kv_head, keys);
    // Several row blocks each read every visible K and V row: rows scattered through the cache
    // (n_kv_head * d apart) are first copied next to each other, once per tile, so that the
    // kernels stream them. The same values in the same order: the same bits.
    const int64_t gathered = n * (pb.d + pb.dv);  // floats, an upper bound for F16
    if (n_rows > kMaxRows && pb.n_kv_head > 1 && gathered <= kMaxGatherFloats) {
      const int64_t base = s + n_rows * n - buf.data();
      float* g = grow(buf, base + n + gathered) + base;  // may move buf: pointers again below
      qr = buf.data();
      acc = qr + n_rows * pb.d;
      mx = acc + n_rows * pb.dv;
      keys = mx + n_rows;
      s = keys + 2 * pb.n_kv;
      float* iota = g;
      for (int64_t m = 0; m < n; ++m) iota[m] = static_cast<float>(m);
      kr = gather_rows(pb.k, rows.kvh, pb.d, pb.n_kv_head, keys, n, iota, g + n);
      vr = gather_rows(pb.v, rows.kvh, pb.dv, pb.n_kv_head, keys, n, iota, g + n + n * pb.d);
    }
    load_queries(pb, rows, qr);
    scores(pb, rows, qr, kr, mbuf.data(), 0, n, s, n, mx);
    for (int64_t r = 0; r < n_rows; ++r) softmax_row(pb, s + r * n, n, mx[r]);
    std::fill(acc, acc + n_rows * pb.dv, 0.0f);
    weighted_v_slice(pb, rows, s, n, vr, 0, n, acc, 0, pb.dv);
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    float* o = out_row(pb, rows, r);
    if (mx[r] == kNegInf) {  // no visible key: zeros, like the reference
      std::fill(o, o + pb.dv, 0.0f);
    } else {
      std::copy(acc + r * pb.dv, acc + (r + 1) * pb.dv, o);
    }
  }
}

void run_tiled(const Problem& pb, ThreadPool& pool, Scratch& scratch) {
  int64_t tile = std::min(pb.n_q, std::max<int64_t>(1, kTileRows / pb.group));
  // Long non-causal problems (a vision encoder): wider tiles, so that each tile's copy of its K
  // and V rows (tiled_task) serves more row blocks, while keeping a few tasks per thread. Every
  // row's result is the same whatever its tile.
  const int64_t wide = std::max<int64_t>(1, kWideTileRows / pb.group);
  if (!pb.params.causal && pb.n_kv >= kWideTileMinKeys && wide > tile &&
      pb.n_kv_head * (pb.n_q / wide) >= 4 * static_cast<int64_t>(pool.size())) {
    tile = wide;
  }
  const int64_t n_tiles = segment_tiles(pb, tile, scratch.tiles);
  const int64_t* tiles = scratch.tiles.data();
  pool.parallel_for(n_tiles * pb.n_kv_head, [&](int64_t task, int thread) {
    // Later tiles first: under a causal mask they see the most keys.
    const int64_t ti = n_tiles - 1 - task / pb.n_kv_head;
    Rows rows{task % pb.n_kv_head, tiles[2 * ti], tiles[2 * ti + 1]};
    tiled_task(pb, rows, scratch.per_thread[sz(thread)], scratch.masks[sz(thread)]);
  });
}

// p rounded up to the next 64-byte boundary (at most 15 floats on).
float* align_line(float* p) {
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}

// The split schedule: all n_q tokens form one block of rows per kv head.
void run_split(const Problem& pb, ThreadPool& pool, Scratch& scratch, int nt) {
  const int64_t n_rows = pb.n_q * pb.group;  // per kv head
  const int64_t all_rows = pb.n_kv_head * n_rows;
  auto& buf = scratch.per_thread[sz(nt)];
  auto& mbuf = scratch.masks[sz(nt)];
  if (mbuf.size() < sz(pb.n_kv)) mbuf.resize(sz(pb.n_kv));
  float* keys = grow(buf, 2 * pb.n_kv);
  const int64_t n = visible_keys(pb, Rows{0, 0, pb.n_q}, keys,
                                 pb.k_rows != nullptr ? keys + pb.n_kv : keys, mbuf.data());
  if (n == 0) {
    std::fill(pb.out, pb.out + pb.n_q * pb.n_head * pb.dv, 0.0f);
    return;
  }
  // Key chunks of the scores: every kv head is in each chunk, so the chunks alone spread the
  // work (two per thread, at least kMinChunk keys each).
  const int64_t n_chunks =
      nt > 1 ? std::max<int64_t>(1, std::min<int64_t>(n / kMinChunk, 2 * int64_t{nt})) : 1;
  // Score rows ns floats apart: whole cache lines, an odd number of them, so that the rows of
  // one key (read and written together by the token-major kernels) fall in different L1 sets
  // (4096 keys = 16 KiB: every row in the same set, more rows than the set has ways).
  int64_t ns = (n + 15) / 16 * 16;
  if ((ns / 16) % 2 == 0) ns += 16;
  // s and part start on a cache line: the threads' runs of kv heads in part (and their chunks
  // in s) then share no line when rows are whole lines (a shared line bounced between the cores
  // on every key).
  keys = grow(buf, 2 * pb.n_kv + all_rows * (pb.d + ns + n_chunks + 1 + pb.dv) + 32);
  const uint64_t* masks = mbuf.data();
  float* qr = keys + 2 * pb.n_kv;               // [kvh][row][d]
  float* s = align_line(qr + all_rows * pb.d);  // [kvh][row][ns]
  float* part = align_line(s + all_rows * ns);  // [kvh][row][dv]
  float* cmax = part + all_rows * pb.dv;        // [kvh][row][chunk]
  float* seen = cmax + all_rows * n_chunks;     // [kvh][row]: 1 when the row sees a key
  for (int64_t kvh = 0; kvh < pb.n_kv_head; ++kvh) {
    load_queries(pb, Rows{kvh, 0, pb.n_q}, qr + kvh * n_rows * pb.d);
  }
  auto chunk_begin = [&](int64_t c) { return n * c / n_chunks; };
  // Scores by chunk of keys, every kv head at once: each key's cache row (all heads) is read
  // once, the rows one after another (head_dots).
  const bool f16k = pb.k.type == GgmlType::kF16;
  const int64_t ks = pb.n_kv_head * pb.d;
  pool.parallel_for(n_chunks, [&](int64_t c, int) {
    const int64_t m0 = chunk_begin(c), m1 = chunk_begin(c + 1);
    if (f16k) {
      pb.kr->head_dots_f16(qr, n_rows, pb.n_kv_head, pb.d,
                           reinterpret_cast<const uint16_t*>(pb.k.data), ks, keys, m0, m1, s, ns);
    } else {
      pb.kr->head_dots_f32(qr, n_rows, pb.n_kv_head, pb.d,
                           reinterpret_cast<const float*>(pb.k.data), ks, keys, m0, m1, s, ns);
    }
    for (int64_t row = 0; row < all_rows; ++row) {
      cmax[row * n_chunks + c] =
          mask_and_scale(pb, masks, (row % n_rows) / pb.group, m0, m1, s + row * ns, kNegInf);
    }
  });
  pool.parallel_for(all_rows, [&](int64_t row, int) {
    const float* cm = cmax + row * n_chunks;
    const float mx = *std::max_element(cm, cm + n_chunks);
    seen[row] = softmax_row(pb, s + row * ns, n, mx) ? 1.0f : 0.0f;
  });
  // p.v by runs of kv heads, each summing ALL keys in order (every output element the same
  // sequential sum as in the tiled schedule, whatever the thread count: batch invariance), each
  // key's row of those heads read once, the rows one after another (pv_heads).
  const int64_t n_runs = std::min<int64_t>(pb.n_kv_head, nt);
  std::fill(part, part + all_rows * pb.dv, 0.0f);
  pool.parallel_for(n_runs, [&](int64_t t, int) {
    const int64_t h0 = pb.n_kv_head * t / n_runs, h1 = pb.n_kv_head * (t + 1) / n_runs;
    const int64_t vs = pb.n_kv_head * pb.dv;
    if (pb.v.type == GgmlType::kF16) {
      pb.kr->pv_heads_f16(s, ns, n_rows, h0, h1, keys, 0, n,
                          reinterpret_cast<const uint16_t*>(pb.v.data), vs, pb.dv, part);
    } else {
      pb.kr->pv_heads_f32(s, ns, n_rows, h0, h1, keys, 0, n,
                          reinterpret_cast<const float*>(pb.v.data), vs, pb.dv, part);
    }
  });
  for (int64_t kvh = 0; kvh < pb.n_kv_head; ++kvh) {
    const Rows rows{kvh, 0, pb.n_q};
    for (int64_t r = 0; r < n_rows; ++r) {
      float* o = out_row(pb, rows, r);
      if (seen[kvh * n_rows + r] == 0.0f) {
        std::fill(o, o + pb.dv, 0.0f);
        continue;
      }
      const float* p0 = part + (kvh * n_rows + r) * pb.dv;
      std::copy(p0, p0 + pb.dv, o);
    }
  }
}

}  // namespace

Status attention_with_isa(geniex::cpu::Isa isa, ThreadPool& pool, Scratch& scratch, const float* q,
                          KvView k, KvView v, int64_t head_dim, int64_t head_dim_v, int64_t n_head,
                          int64_t n_kv_head, int64_t n_q, int64_t n_kv,
                          std::span<const int32_t> q_pos, std::span<const int32_t> k_pos,
                          const graph::AttentionParams& params, float* out,
                          const KvPaging& paging) {
  if (n_kv_head <= 0 || n_head % n_kv_head != 0) {
    return invalid_argument("attention: n_head must be a multiple of n_kv_head");
  }
  if (static_cast<int64_t>(q_pos.size()) != n_q || static_cast<int64_t>(k_pos.size()) != n_kv) {
    return invalid_argument("attention: position arrays do not match n_q / n_kv");
  }
  if (head_dim <= 0 || head_dim_v <= 0 || n_q < 0 || n_kv < 0) {
    return invalid_argument("attention: sizes must be positive");
  }
  auto is_block = [](GgmlType t) { return t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0; };
  auto is_float = [](GgmlType t) { return t == GgmlType::kF32 || t == GgmlType::kF16; };
  const bool blocks = is_block(k.type) && is_block(v.type);
  if (!blocks && !(is_float(k.type) && is_float(v.type))) {
    return invalid_argument("attention: K and V must both be F32/F16 or both Q8_0/Q4_0, got " +
                            std::string(ggml_type_name(k.type)) + " and " +
                            std::string(ggml_type_name(v.type)));
  }
  std::optional<geniex::cpu::DotKernels> dot;
  if (blocks) {
    if (head_dim % 32 != 0 || head_dim_v % 32 != 0) {
      return invalid_argument(
          "attention: a Q8_0/Q4_0 cache needs head dims that are multiples of "
          "32, got " +
          std::to_string(head_dim) + " and " + std::to_string(head_dim_v));
    }
    dot = geniex::cpu::dot_kernels(k.type, isa);
    if (!dot) {
      return unimplemented("attention: no dot kernel for " + std::string(ggml_type_name(k.type)));
    }
  }
  const int64_t n_rows = paging.n_rows == 0 ? n_kv : paging.n_rows;
  if (n_kv >= (int64_t{1} << 24) || n_rows >= (int64_t{1} << 24)) {
    return invalid_argument("attention: n_kv or the rows of k / v too large (2^24)");
  }
  if (n_q == 0) return {};
  {
    // Rows and segments are checked before anything is read (kOutOfRange names the entry).
    const graph::ref::AttentionDims dims{head_dim, head_dim_v, n_head, n_kv_head,
                                         n_q,      n_kv,       n_rows};
    GENIEX_TRY(graph::ref::check_attention_paging(dims, {paging.k_rows, paging.q_seg}));
  }
  Problem pb;
  pb.kr = &kernels_for(isa);
  pb.q = q;
  pb.k = k;
  pb.v = v;
  pb.d = head_dim;
  pb.dv = head_dim_v;
  pb.n_head = n_head;
  pb.n_kv_head = n_kv_head;
  pb.n_q = n_q;
  pb.n_kv = n_kv;
  pb.group = n_head / n_kv_head;
  pb.q_pos = q_pos;
  pb.k_pos = k_pos;
  pb.k_rows = paging.k_rows.empty() ? nullptr : paging.k_rows.data();
  pb.q_seg = paging.q_seg.empty() ? nullptr : paging.q_seg.data();
  pb.params = params;
  pb.round_q = k.type == GgmlType::kF16;
  pb.round_p = v.type == GgmlType::kF16;
  pb.out = out;
  if (blocks) {
    pb.dot = &*dot;
    pb.k_head_bytes = *ggml_row_bytes(k.type, static_cast<uint64_t>(head_dim));
    pb.v_head_bytes = *ggml_row_bytes(v.type, static_cast<uint64_t>(head_dim_v));
    pb.q8_bytes = *ggml_row_bytes(dot->act_type, static_cast<uint64_t>(head_dim));
  }

  const int nt = pool.size();
  if (scratch.per_thread.size() < sz(nt) + 1) scratch.per_thread.resize(sz(nt) + 1);
  if (scratch.masks.size() < sz(nt) + 1) scratch.masks.resize(sz(nt) + 1);
  if (!blocks && dense_eligible(pb)) {  // before the split choice: any number of queries
    run_dense(pb, pool, scratch);
    return {};
  }
  const int64_t tile = std::max<int64_t>(1, kTileRows / pb.group);
  const int64_t tiled_tasks = n_kv_head * ((n_q + tile - 1) / tile);
  // Queries of several sequences (a batched decode step) go to the tiled schedule, one tile per
  // sequence: the split schedule's shared scores would cover every row x the union of the
  // sequences' keys. Both give the same bits per row.
  const bool few_rows = n_q * pb.group <= kMaxSplitRows && one_segment(pb);
  // Float caches: the token-major split schedule for every decode step of one sequence; Q8_0 /
  // Q4_0 caches: the split schedule where the tiled one would leave threads idle.
  const bool split = few_rows && (!blocks || tiled_tasks < 2 * static_cast<int64_t>(nt));
  if (blocks) {
    split ? run_blocks_split(pb, pool, scratch, nt) : run_blocks_tiled(pb, pool, scratch);
  } else {
    split ? run_split(pb, pool, scratch, nt) : run_tiled(pb, pool, scratch);
  }
  return {};
}

}  // namespace attn

Status attention(ThreadPool& pool, Scratch& scratch, const float* q, KvView k, KvView v,
                 int64_t head_dim, int64_t head_dim_v, int64_t n_head, int64_t n_kv_head,
                 int64_t n_q, int64_t n_kv, std::span<const int32_t> q_pos,
                 std::span<const int32_t> k_pos, const graph::AttentionParams& params, float* out,
                 const KvPaging& paging) {
  return attn::attention_with_isa(geniex::cpu::detect_isa(), pool, scratch, q, k, v, head_dim,
                                  head_dim_v, n_head, n_kv_head, n_q, n_kv, q_pos, k_pos, params,
                                  out, paging);
}

}  // namespace geniex::backends::cpu
