// Paged addressing of cpu::attention (k_rows, q_seg), for every kernel set this CPU runs, 1 and 3
// threads, both schedules (split: few query rows; tiled: many), F32 and F16 caches:
// * scattered rows: the keys of a contiguous problem moved to random rows of a state twice as
//   big, every other row NaN. The output must equal the contiguous run bit for bit (same keys in
//   the same order, only the addresses differ), and the F32 reference with the same k_rows must
//   equal the contiguous reference bit for bit.
// * segments: three sequences of different lengths in one batch (a prefill chunk over a cached
//   prefix, a one-token decode, a short prefill sharing its first rows with the first sequence),
//   and three one-token decodes. Each sequence's output must match running it alone: exactly for
//   the reference; for the CPU within the bounds of attention_test.cpp (F32 1e-5 of max|v| vs
//   the reference; F16 5e-4 of max|v| vs the CPU run alone, since a batch groups query rows
//   differently, so dots may sum in another order and move a probability by one f16 ulp).
// * errors: rows or segments out of range are kOutOfRange before anything is read.
// * through the graph: CacheWrite into scattered slots of a NaN-filled state, then attention
//   with k_rows and q_seg over two sequences (prefill, then one decode token each): the CPU
//   backend against run_reference (F32 1e-5, F16 3e-3 of max|v| as in cpu_backend_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/attention_problem.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/isa.h"
#include "core/fp16.h"
#include "graph/ref_ops.h"
#include "graph/run_reference.h"

namespace geniex::backends::cpu {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One attention call: k and v hold n_rows rows; the list has n_kv entries.
struct Problem {
  int64_t d = 64, dv = 64, nh = 4, nkvh = 1, nq = 1, n_kv = 0, n_rows = 0;
  GgmlType type = GgmlType::kF32;
  std::vector<float> q, k, v;  // k, v: f32 values (for F16 exactly representable, or NaN)
  std::vector<uint16_t> k16, v16;
  std::vector<int32_t> q_pos, k_pos, k_rows, q_seg;
  graph::AttentionParams params;

  void finish() {
    if (type != GgmlType::kF16) return;
    k16.resize(k.size());
    v16.resize(v.size());
    for (size_t i = 0; i < k.size(); ++i) k16[i] = fp32_to_fp16(k[i]);
    for (size_t i = 0; i < v.size(); ++i) v16[i] = fp32_to_fp16(v[i]);
  }
  [[nodiscard]] KvView kview() const {
    return type == GgmlType::kF16 ? KvView{type, reinterpret_cast<const uint8_t*>(k16.data())}
                                  : KvView{type, reinterpret_cast<const uint8_t*>(k.data())};
  }
  [[nodiscard]] KvView vview() const {
    return type == GgmlType::kF16 ? KvView{type, reinterpret_cast<const uint8_t*>(v16.data())}
                                  : KvView{type, reinterpret_cast<const uint8_t*>(v.data())};
  }
  [[nodiscard]] KvPaging paging() const { return KvPaging{n_rows, k_rows, q_seg}; }
};

float maybe16(GgmlType t, float x) {
  return t == GgmlType::kF16 ? fp16_to_fp32(fp32_to_fp16(x)) : x;
}

// A contiguous problem (row j = entry j) with positions 0..n_kv-1 (shuffled if asked, every
// `empty_every`-th slot empty) and queries at the last n_q positions; rows no query sees are NaN.
Problem contiguous(GgmlType type, int64_t d, int64_t nh, int64_t nkvh, int64_t nq, int64_t n_kv,
                   int32_t window, int empty_every, bool shuffled, uint32_t seed) {
  Problem p;
  p.type = type;
  p.d = p.dv = d;
  p.nh = nh;
  p.nkvh = nkvh;
  p.nq = nq;
  p.n_kv = p.n_rows = n_kv;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  p.q.resize(sz(d * nh * nq));
  for (auto& x : p.q) x = nd(rng);
  p.k.resize(sz(d * nkvh * n_kv));
  p.v.resize(sz(d * nkvh * n_kv));
  for (auto& x : p.k) x = maybe16(type, nd(rng));
  for (auto& x : p.v) x = maybe16(type, nd(rng));
  p.k_pos.resize(sz(n_kv));
  std::iota(p.k_pos.begin(), p.k_pos.end(), 0);
  if (shuffled) std::shuffle(p.k_pos.begin(), p.k_pos.end(), rng);
  int32_t max_pos = 0;
  for (int64_t j = 0; j < n_kv; ++j) {
    if (empty_every > 0 && j % empty_every == empty_every - 1) p.k_pos[sz(j)] = -1;
    max_pos = std::max(max_pos, p.k_pos[sz(j)]);
  }
  for (int64_t t = 0; t < nq; ++t) {
    p.q_pos.push_back(std::max<int32_t>(0, max_pos - static_cast<int32_t>(nq - 1 - t)));
  }
  p.params.scale = 1.0f / std::sqrt(static_cast<float>(d));
  p.params.sliding_window = window;
  for (int64_t j = 0; j < n_kv; ++j) {
    bool seen = false;
    for (int32_t qp : p.q_pos) seen |= graph::ref::attention_visible(qp, p.k_pos[sz(j)], p.params);
    if (seen) continue;
    std::fill_n(p.k.begin() + j * nkvh * d, nkvh * d, kNaN);
    std::fill_n(p.v.begin() + j * nkvh * d, nkvh * d, kNaN);
  }
  p.finish();
  return p;
}

// The same problem with entry j moved to a random row of a state of 2 n_kv + 3 rows; every row
// not in k_rows is NaN.
Problem scattered(const Problem& c, uint32_t seed) {
  Problem p = c;
  p.n_rows = 2 * c.n_kv + 3;
  std::vector<int32_t> rows(sz(p.n_rows));
  std::iota(rows.begin(), rows.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(rows.begin(), rows.end(), rng);
  p.k_rows.assign(rows.begin(), rows.begin() + c.n_kv);
  const int64_t ks = c.nkvh * c.d, vs = c.nkvh * c.dv;
  p.k.assign(sz(p.n_rows * ks), kNaN);
  p.v.assign(sz(p.n_rows * vs), kNaN);
  for (int64_t j = 0; j < c.n_kv; ++j) {
    const int64_t r = p.k_rows[sz(j)];
    std::copy_n(c.k.begin() + j * ks, ks, p.k.begin() + r * ks);
    std::copy_n(c.v.begin() + j * vs, vs, p.v.begin() + r * vs);
  }
  p.finish();
  return p;
}

std::vector<float> run_ref(const Problem& p) {
  std::vector<float> out(sz(p.dv * p.nh * p.nq));
  const graph::ref::AttentionDims dims{p.d, p.dv, p.nh, p.nkvh, p.nq, p.n_kv, p.n_rows};
  const Status st = graph::ref::attention(p.q, p.k, p.v, dims, p.q_pos, p.k_pos, p.params,
                                          {p.k_rows, p.q_seg}, out);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

std::vector<float> run_cpu(const Problem& p, geniex::cpu::Isa isa, ThreadPool& pool) {
  Scratch scratch;
  std::vector<float> out(sz(p.dv * p.nh * p.nq), 12345.0f);
  const Status st = attn::attention_with_isa(isa, pool, scratch, p.q.data(), p.kview(), p.vview(),
                                             p.d, p.dv, p.nh, p.nkvh, p.nq, p.n_kv, p.q_pos,
                                             p.k_pos, p.params, out.data(), p.paging());
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

// One representative ISA per distinct kernel set.
std::vector<geniex::cpu::Isa> kernel_isas() {
  std::vector<geniex::cpu::Isa> isas;
  std::vector<const attn::Kernels*> seen;
  for (geniex::cpu::Isa isa : geniex::cpu::available_isas()) {
    const attn::Kernels* kr = &attn::kernels_for(isa);
    if (std::find(seen.begin(), seen.end(), kr) != seen.end()) continue;
    seen.push_back(kr);
    isas.push_back(isa);
  }
  return isas;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double max_abs_finite(const std::vector<float>& x) {
  double m = 1e-30;
  for (float f : x) {
    if (std::isfinite(f)) m = std::max(m, static_cast<double>(std::fabs(f)));
  }
  return m;
}

// max |got - want| / scale (NaN or inf counts as infinite).
double rel_err(const std::vector<float>& got, const std::vector<float>& want, double scale) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]) / scale;
    if (!(e <= worst)) worst = std::isfinite(e) ? e : std::numeric_limits<double>::infinity();
  }
  return worst;
}

TEST(CpuAttentionPaged, ScatteredRowsEqualContiguousBitForBit) {
  struct Shape {
    const char* name;
    int64_t d, nh, nkvh, nq, n_kv;
    int32_t window;
    int empty_every;
    bool shuffled;
  };
  const Shape shapes[] = {
      {"decode", 128, 4, 1, 1, 600, 0, 0, false},
      {"decode gqa 8/2 window shuffled empty", 64, 8, 2, 1, 300, 16, 7, true},
      {"batch 3", 128, 4, 1, 3, 257, 0, 9, false},
      {"prefill", 64, 4, 1, 70, 70, 0, 0, false},
      {"prefill chunk gqa 8/2 window empty", 64, 8, 2, 48, 400, 16, 11, true},
  };
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16}) {
    for (const Shape& s : shapes) {
      const std::string what = std::string(s.name) + " " + std::string(ggml_type_name(type));
      const Problem c = contiguous(type, s.d, s.nh, s.nkvh, s.nq, s.n_kv, s.window, s.empty_every,
                                   s.shuffled, static_cast<uint32_t>(s.n_kv * 7 + s.nq));
      const Problem p = scattered(c, 99);
      if (type == GgmlType::kF32) {
        EXPECT_TRUE(same_bits(run_ref(p), run_ref(c))) << what << " reference";
      }
      for (int threads : {1, 3}) {
        ThreadPool pool(threads);
        for (geniex::cpu::Isa isa : kernel_isas()) {
          const auto want = run_cpu(c, isa, pool);
          const auto got = run_cpu(p, isa, pool);
          EXPECT_TRUE(same_bits(got, want))
              << what << " isa " << geniex::cpu::isa_name(isa) << " threads " << threads;
          for (float f : got) ASSERT_TRUE(std::isfinite(f)) << what;
        }
      }
    }
  }
}

// A sequence of a batch: `len` keys at positions 0..len-1, the last `n_new` of them queried;
// its first `shared` rows are those of sequence 0 (a shared prefix).
struct SeqSpec {
  int64_t len, n_new, shared;
};

struct Batch {
  Problem all;                // every sequence in one call (k_rows, q_seg)
  std::vector<Problem> each;  // each sequence alone, contiguous
};

Batch make_batch(GgmlType type, int64_t d, int64_t nh, int64_t nkvh,
                 const std::vector<SeqSpec>& specs, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Batch b;
  Problem& a = b.all;
  a.type = type;
  a.d = a.dv = d;
  a.nh = nh;
  a.nkvh = nkvh;
  a.params.scale = 1.0f / std::sqrt(static_cast<float>(d));
  int64_t total = 0;
  for (const auto& s : specs) total += s.len;
  a.n_rows = total + 11;  // spare rows stay NaN
  std::vector<int32_t> free_rows(sz(a.n_rows));
  std::iota(free_rows.begin(), free_rows.end(), 0);
  std::shuffle(free_rows.begin(), free_rows.end(), rng);
  const int64_t ks = nkvh * d;
  a.k.assign(sz(a.n_rows * ks), kNaN);
  a.v.assign(sz(a.n_rows * ks), kNaN);
  size_t next_free = 0;
  std::vector<int32_t> rows0;
  for (const auto& s : specs) {
    Problem e;
    e.type = type;
    e.d = e.dv = d;
    e.nh = nh;
    e.nkvh = nkvh;
    e.nq = s.n_new;
    e.n_kv = e.n_rows = s.len;
    e.params = a.params;
    const auto seg_begin = static_cast<int32_t>(a.k_pos.size());
    for (int64_t j = 0; j < s.len; ++j) {
      const int32_t row = j < s.shared ? rows0[sz(j)] : free_rows[next_free++];
      if (b.each.empty()) rows0.push_back(row);
      if (j >= s.shared) {
        for (int64_t i = 0; i < ks; ++i) {
          a.k[sz(row * ks + i)] = maybe16(type, nd(rng));
          a.v[sz(row * ks + i)] = maybe16(type, nd(rng));
        }
      }
      a.k_rows.push_back(row);
      a.k_pos.push_back(static_cast<int32_t>(j));
      e.k_pos.push_back(static_cast<int32_t>(j));
      e.k.insert(e.k.end(), a.k.begin() + row * ks, a.k.begin() + (row + 1) * ks);
      e.v.insert(e.v.end(), a.v.begin() + row * ks, a.v.begin() + (row + 1) * ks);
    }
    const auto seg_end = static_cast<int32_t>(a.k_pos.size());
    for (int64_t t = 0; t < s.n_new; ++t) {
      const auto pos = static_cast<int32_t>(s.len - s.n_new + t);
      a.q_pos.push_back(pos);
      e.q_pos.push_back(pos);
      a.q_seg.push_back(seg_begin);
      a.q_seg.push_back(seg_end);
      for (int64_t i = 0; i < d * nh; ++i) e.q.push_back(nd(rng));
    }
    a.q.insert(a.q.end(), e.q.begin(), e.q.end());
    e.finish();
    b.each.push_back(std::move(e));
  }
  a.nq = static_cast<int64_t>(a.q_pos.size());
  a.n_kv = static_cast<int64_t>(a.k_pos.size());
  a.finish();
  return b;
}

// Output rows of sequence `i` inside the batch output.
std::vector<float> slice(const Batch& b, const std::vector<float>& out, size_t i) {
  int64_t t0 = 0;
  for (size_t s = 0; s < i; ++s) t0 += b.each[s].nq;
  const int64_t row = b.all.nh * b.all.dv;
  return {out.begin() + t0 * row, out.begin() + (t0 + b.each[i].nq) * row};
}

TEST(CpuAttentionPaged, SegmentsOfSeveralSequencesMatchEachAlone) {
  struct Config {
    const char* name;
    int64_t d, nh, nkvh;
    std::vector<SeqSpec> seqs;
  };
  const std::vector<Config> configs = {
      // 28 query tokens: the tiled schedule, tiles spanning sequence boundaries.
      {"prefill chunk + decode + shared-prefix prefill",
       64,
       4,
       1,
       {{50, 20, 0}, {77, 1, 0}, {19, 7, 12}}},
      {"same, gqa 8/2", 128, 8, 2, {{50, 20, 0}, {77, 1, 0}, {19, 7, 12}}},
      // Three one-token decodes (a batched decode step): one tile per sequence, each reading
      // only its own keys, while each alone takes the split schedule.
      {"three decodes", 128, 4, 1, {{300, 1, 0}, {45, 1, 0}, {130, 1, 100}}},
      {"three decodes gqa 8/2", 64, 8, 2, {{33, 1, 0}, {200, 1, 0}, {64, 1, 20}}},
  };
  double worst_f32 = 0.0, worst_f16 = 0.0;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16}) {
    for (const Config& cfg : configs) {
      const std::string what = std::string(cfg.name) + " " + std::string(ggml_type_name(type));
      const Batch b = make_batch(type, cfg.d, cfg.nh, cfg.nkvh, cfg.seqs, 7);
      const double vmax = max_abs_finite(b.all.v);
      const auto ref_all = run_ref(b.all);
      for (size_t i = 0; i < b.each.size(); ++i) {
        EXPECT_TRUE(same_bits(slice(b, ref_all, i), run_ref(b.each[i])))
            << what << " reference, sequence " << i;
      }
      for (int threads : {1, 3}) {
        ThreadPool pool(threads);
        for (geniex::cpu::Isa isa : kernel_isas()) {
          const auto got = run_cpu(b.all, isa, pool);
          for (size_t i = 0; i < b.each.size(); ++i) {
            const std::string at = what + " isa " + std::string(geniex::cpu::isa_name(isa)) +
                                   " threads " + std::to_string(threads) + " sequence " +
                                   std::to_string(i);
            // Tiles never span two sequences, and both schedules give the same bits per row:
            // each sequence's rows equal the same sequence run alone (batch invariance).
            EXPECT_TRUE(same_bits(slice(b, got, i), run_cpu(b.each[i], isa, pool))) << at;
            if (type == GgmlType::kF32) {
              const double e = rel_err(slice(b, got, i), run_ref(b.each[i]), vmax);
              EXPECT_LE(e, 1e-5) << at;
              worst_f32 = std::max(worst_f32, e);
            } else {
              const double e = rel_err(slice(b, got, i), run_cpu(b.each[i], isa, pool), vmax);
              EXPECT_LE(e, 5e-4) << at;
              worst_f16 = std::max(worst_f16, e);
            }
          }
        }
      }
    }
  }
  RecordProperty("worst_f32_vs_ref", std::to_string(worst_f32));
  RecordProperty("worst_f16_vs_alone", std::to_string(worst_f16));
}

// The tiled schedule's tiles: runs of at most `tile` queries with one segment each, so a
// batched decode step gives every sequence its own tile (which then reads only its own keys).
TEST(CpuAttentionPaged, TilesNeverSpanTwoSegments) {
  // Queries: 5 of a prefill chunk (segment [0, 9)), then one decode token each of three
  // sequences ([9, 20), [20, 21), [21, 40)), then 2 more of the last one.
  const std::vector<int32_t> seg = {0, 9,  0,  9,  0,  9,  0,  9,  0,  9,
                                    9, 20, 20, 21, 21, 40, 21, 40, 21, 40};
  attn::Problem pb;
  pb.n_q = static_cast<int64_t>(seg.size() / 2);
  pb.q_seg = seg.data();
  std::vector<int64_t> tiles;
  ASSERT_EQ(attn::segment_tiles(pb, 4, tiles), 5);
  EXPECT_EQ(tiles, (std::vector<int64_t>{0, 4, 4, 1, 5, 1, 6, 1, 7, 3}));
  EXPECT_FALSE(attn::one_segment(pb));
  pb.n_q = 5;  // the prefill chunk alone: one segment, tiles of 4 then 1
  EXPECT_TRUE(attn::one_segment(pb));
  ASSERT_EQ(attn::segment_tiles(pb, 4, tiles), 2);
  EXPECT_EQ(tiles, (std::vector<int64_t>{0, 4, 4, 1}));
  pb.q_seg = nullptr;  // no segments: every query sees the whole list
  pb.n_q = 10;
  EXPECT_TRUE(attn::one_segment(pb));
  ASSERT_EQ(attn::segment_tiles(pb, 4, tiles), 3);
  EXPECT_EQ(tiles, (std::vector<int64_t>{0, 4, 4, 4, 8, 2}));
}

TEST(CpuAttentionPaged, BadRowsAndSegmentsAreOutOfRange) {
  const Batch b = make_batch(GgmlType::kF32, 32, 2, 1, {{5, 2, 0}, {4, 1, 2}}, 3);
  ThreadPool pool(2);
  Scratch scratch;
  auto run = [&](const Problem& p) {
    std::vector<float> out(sz(p.dv * p.nh * p.nq));
    return attention(pool, scratch, p.q.data(), p.kview(), p.vview(), p.d, p.dv, p.nh, p.nkvh, p.nq,
                     p.n_kv, p.q_pos, p.k_pos, p.params, out.data(), p.paging());
  };
  auto ref = [&](const Problem& p) {
    std::vector<float> out(sz(p.dv * p.nh * p.nq));
    const graph::ref::AttentionDims dims{p.d, p.dv, p.nh, p.nkvh, p.nq, p.n_kv, p.n_rows};
    return graph::ref::attention(p.q, p.k, p.v, dims, p.q_pos, p.k_pos, p.params,
                                 {p.k_rows, p.q_seg}, out);
  };
  ASSERT_TRUE(run(b.all).ok());
  ASSERT_TRUE(ref(b.all).ok());
  auto expect = [&](const Problem& p, StatusCode code, const std::string& what) {
    EXPECT_EQ(run(p).code(), code) << what;
    EXPECT_EQ(ref(p).code(), code) << what << " (reference)";
  };
  for (int32_t bad : {-1, static_cast<int32_t>(b.all.n_rows), 1 << 30}) {
    Problem p = b.all;
    p.k_rows[3] = bad;
    expect(p, StatusCode::kOutOfRange, "row " + std::to_string(bad));
    p.k_pos[3] = -1;  // even a masked entry must name a real row
    expect(p, StatusCode::kOutOfRange, "masked row " + std::to_string(bad));
  }
  const std::vector<std::pair<int32_t, int32_t>> bad_segs = {
      {-1, 3}, {4, 3}, {0, static_cast<int32_t>(b.all.n_kv) + 1}};
  for (const auto& [lo, hi] : bad_segs) {
    Problem p = b.all;
    p.q_seg[2] = lo;
    p.q_seg[3] = hi;
    expect(p, StatusCode::kOutOfRange,
           "segment [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  }
  {
    Problem p = b.all;
    p.k_rows.pop_back();
    expect(p, StatusCode::kInvalidArgument, "short k_rows");
  }
  {
    Problem p = b.all;
    p.q_seg.pop_back();
    expect(p, StatusCode::kInvalidArgument, "short q_seg");
  }
  {
    Problem p = b.all;  // segments need rows; without rows the state must have n_kv rows
    p.k_rows.clear();
    expect(p, StatusCode::kInvalidArgument, "q_seg without k_rows");
    p.q_seg.clear();
    expect(p, StatusCode::kInvalidArgument, "n_rows != n_kv without k_rows");
  }
  {
    // An empty segment is fine: that query sees nothing and outputs zeros.
    Problem p = b.all;
    p.q_seg[0] = p.q_seg[1] = 2;
    std::vector<float> out(sz(p.dv * p.nh * p.nq), 1.0f);
    ASSERT_TRUE(attention(pool, scratch, p.q.data(), p.kview(), p.vview(), p.d, p.dv, p.nh, p.nkvh,
                          p.nq, p.n_kv, p.q_pos, p.k_pos, p.params, out.data(), p.paging())
                    .ok());
    for (int64_t i = 0; i < p.nh * p.dv; ++i) EXPECT_EQ(out[sz(i)], 0.0f);
  }
}

// Two sequences through CacheWrite + Attention(k_rows, q_seg) graphs, CPU backend vs reference.
struct PagedStep {
  graph::Graph g;
  graph::NodeId q, k, v, slots, q_pos, k_pos, k_rows, q_seg, kstate, vstate, out;
};

constexpr int64_t kGd = 32, kGnh = 4, kGnkv = 2, kGrows = 16;

PagedStep paged_step(GgmlType type, int64_t n_new, int64_t n_list) {
  using graph::make_desc;
  using graph::OpKind;
  PagedStep s;
  auto& g = s.g;
  constexpr GgmlType kI32 = GgmlType::kI32, kF32 = GgmlType::kF32;
  s.q = g.add_input(make_desc(kF32, kGd, kGnh, n_new), "q");
  s.k = g.add_input(make_desc(kF32, kGd, kGnkv, n_new), "k");
  s.v = g.add_input(make_desc(kF32, kGd, kGnkv, n_new), "v");
  s.slots = g.add_input(make_desc(kI32, n_new), "slots");
  s.q_pos = g.add_input(make_desc(kI32, n_new), "q_pos");
  s.k_pos = g.add_input(make_desc(kI32, n_list), "k_pos");
  s.k_rows = g.add_input(make_desc(kI32, n_list), "k_rows");
  s.q_seg = g.add_input(make_desc(kI32, 2, n_new), "q_seg");
  s.kstate = g.add_state(make_desc(type, kGd, kGnkv, kGrows), "cache_k");
  s.vstate = g.add_state(make_desc(type, kGd, kGnkv, kGrows), "cache_v");
  auto kw = g.add_op(OpKind::kCacheWrite, {s.kstate, s.k, s.slots}, {}, "write_k");
  auto vw = g.add_op(OpKind::kCacheWrite, {s.vstate, s.v, s.slots}, {}, "write_v");
  EXPECT_TRUE(kw.ok() && vw.ok());
  graph::OpParams p;
  p.attn.scale = 1.0f / std::sqrt(static_cast<float>(kGd));
  auto a =
      g.add_op(OpKind::kAttention, {s.q, *kw, *vw, s.q_pos, s.k_pos, s.k_rows, s.q_seg}, p, "attn");
  EXPECT_TRUE(a.ok()) << a.status().to_string();
  s.out = a.ok() ? *a : 0;
  return s;
}

TEST(CpuAttentionPaged, GraphCacheWriteThenSegmentedAttentionMatchesReference) {
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16}) {
    const size_t elem = type == GgmlType::kF16 ? 2 : 4;
    const size_t state_bytes = sz(kGd * kGnkv * kGrows) * elem;
    std::vector<uint8_t> nan_fill(state_bytes);
    for (size_t i = 0; i < state_bytes; i += elem) {
      if (type == GgmlType::kF16) {
        const uint16_t h = 0x7E00;
        std::memcpy(&nan_fill[i], &h, 2);
      } else {
        std::memcpy(&nan_fill[i], &kNaN, 4);
      }
    }
    const double tol = type == GgmlType::kF16 ? 3e-3 : 1e-5;
    for (int threads : {1, 3}) {
      auto be = make_cpu_backend(CpuBackendOptions{threads});
      ASSERT_TRUE(be.ok());
      std::vector<uint8_t> ck = nan_fill, cv = nan_fill, rk = nan_fill, rv = nan_fill;
      struct Step {
        std::vector<int32_t> slots, q_pos, k_pos, k_rows, q_seg;
      };
      // Sequence A: slots 9, 3, 12, 0, 7 (+2); B: 14, 5, 1 (+10). Rows 4, 6, 8, 11, 13, 15 stay
      // NaN.
      const std::vector<Step> steps = {
          {{9, 3, 12, 0, 7, 14, 5, 1},
           {0, 1, 2, 3, 4, 0, 1, 2},
           {0, 1, 2, 3, 4, 0, 1, 2},
           {9, 3, 12, 0, 7, 14, 5, 1},
           {0, 5, 0, 5, 0, 5, 0, 5, 0, 5, 5, 8, 5, 8, 5, 8}},
          {{2, 10},
           {5, 3},
           {0, 1, 2, 3, 4, 5, 0, 1, 2, 3},
           {9, 3, 12, 0, 7, 2, 14, 5, 1, 10},
           {0, 6, 6, 10}},
      };
      uint32_t seed = 500;
      for (const Step& st : steps) {
        const auto n_new = static_cast<int64_t>(st.slots.size());
        PagedStep ps = paged_step(type, n_new, static_cast<int64_t>(st.k_pos.size()));
        std::mt19937 rng(seed++);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> q(sz(kGd * kGnh * n_new)), k(sz(kGd * kGnkv * n_new)), v(k.size());
        for (auto* vec : {&q, &k, &v}) {
          for (auto& x : *vec) x = nd(rng);
        }
        graph::Bindings b;
        b.bind_input(ps.q, std::span<const float>(q));
        b.bind_input(ps.k, std::span<const float>(k));
        b.bind_input(ps.v, std::span<const float>(v));
        b.bind_input(ps.slots, std::span<const int32_t>(st.slots));
        b.bind_input(ps.q_pos, std::span<const int32_t>(st.q_pos));
        b.bind_input(ps.k_pos, std::span<const int32_t>(st.k_pos));
        b.bind_input(ps.k_rows, std::span<const int32_t>(st.k_rows));
        b.bind_input(ps.q_seg, std::span<const int32_t>(st.q_seg));
        std::vector<float> want(sz(kGd * kGnh * n_new)), got(want.size(), kNaN);
        graph::Bindings rb = b, cb = b;
        rb.bind_state(ps.kstate, type, rk);
        rb.bind_state(ps.vstate, type, rv);
        rb.bind_output(ps.out, want);
        cb.bind_state(ps.kstate, type, ck);
        cb.bind_state(ps.vstate, type, cv);
        cb.bind_output(ps.out, got);
        const Status rs = graph::run_reference(ps.g, rb);
        ASSERT_TRUE(rs.ok()) << rs.to_string();
        const Status cs = (*be)->run(ps.g, cb);
        ASSERT_TRUE(cs.ok()) << cs.to_string();
        const std::string what = std::string(ggml_type_name(type)) + " " + std::to_string(n_new) +
                                 " tokens, " + std::to_string(threads) + " threads";
        EXPECT_LE(rel_err(got, want, max_abs_finite(v)), tol) << what;
        EXPECT_EQ(ck, rk) << what;
        EXPECT_EQ(cv, rv) << what;

        // A row outside the state is kOutOfRange from both executors, naming the node.
        std::vector<int32_t> bad_rows = st.k_rows;
        bad_rows.back() = static_cast<int32_t>(kGrows);
        rb.bind_input(ps.k_rows, std::span<const int32_t>(bad_rows));
        cb.bind_input(ps.k_rows, std::span<const int32_t>(bad_rows));
        const Status rbad = graph::run_reference(ps.g, rb);
        const Status cbad = (*be)->run(ps.g, cb);
        EXPECT_EQ(rbad.code(), StatusCode::kOutOfRange) << rbad.to_string();
        EXPECT_EQ(cbad.code(), StatusCode::kOutOfRange) << cbad.to_string();
        EXPECT_NE(cbad.message().find("attn"), std::string::npos) << cbad.to_string();
      }
    }
  }
}

}  // namespace
}  // namespace geniex::backends::cpu
