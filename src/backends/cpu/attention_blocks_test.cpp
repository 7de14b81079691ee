// cpu::attention over Q8_0 / Q4_0 caches (op_attention_blocks.cpp) against
// graph::ref::attention_blocks (llama.cpp's flash-attention numerics), for every kernel set this
// CPU runs, 1 and 3 threads, both schedules, K/V types Q8_0/Q8_0, Q4_0/Q4_0 and Q8_0/Q4_0,
// GQA, masks, soft-capping, scattered rows and segments.
//
// Bound: |cpu - ref| <= 5e-6 * max|v| per element (measured 4.9e-7 with the AVX-512, AVX2 and
// scalar sets). The CPU quantizes q exactly as the reference (byte-identical quantizers) and
// dequantizes V exactly; what differs is the float order of the per-block sums inside each dot
// (a few ulps of a score), and for the split schedule (decode) the merge of per-chunk partials
// (one extra rescale per chunk).
// Every row no query may see holds blocks with a NaN scale, so reading one would poison the
// output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/isa.h"
#include "graph/ref_ops.h"
#include "quant/quant.h"

namespace geniex::backends::cpu {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

constexpr double kTol = 5e-6;

struct Case {
  std::string name;
  int64_t d = 64, dv = 64, nh = 4, nkvh = 1, nq = 1, n_kv = 16;
  bool causal = true;
  int32_t window = 0;
  float softcap = 0.0f;
  int empty_every = 0;
  bool scatter = false;  // keys at random rows of a state of 2 n_kv + 3 rows (k_rows)
};

struct Blocks {
  GgmlType kt, vt;
  int64_t n_rows = 0;
  std::vector<float> q;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> q_pos, k_pos, k_rows, q_seg;
  graph::AttentionParams params;
  double vmax = 1e-30;  // max |dequantized v| over the rows some query sees
};

size_t head_bytes(GgmlType t, int64_t n) {
  return sz(static_cast<int64_t>(*ggml_row_bytes(t, static_cast<uint64_t>(n))));
}

// Quantizes `x` (n_rows * heads rows of n) into bytes of type t.
std::vector<uint8_t> quantize_rows(GgmlType t, const std::vector<float>& x, int64_t n) {
  const size_t hb = head_bytes(t, n);
  std::vector<uint8_t> out(hb * (x.size() / sz(n)));
  for (size_t r = 0; r < x.size() / sz(n); ++r) {
    EXPECT_TRUE(quant::quantize_row(t, std::span(x).subspan(r * sz(n), sz(n)),
                                    std::span(out).subspan(r * hb, hb))
                    .ok());
  }
  return out;
}

// Every block of row `row` (all heads) gets a NaN f16 scale.
void poison_row(std::vector<uint8_t>& bytes, GgmlType t, int64_t row, size_t row_bytes) {
  const size_t block = traits(t).type_size;
  for (size_t b = sz(row) * row_bytes; b < sz(row + 1) * row_bytes; b += block) {
    bytes[b] = 0x00;
    bytes[b + 1] = 0x7E;
  }
}

Blocks make(const Case& c, GgmlType kt, GgmlType vt) {
  Blocks p;
  p.kt = kt;
  p.vt = vt;
  std::mt19937 rng(static_cast<uint32_t>(c.d * 131 + c.n_kv * 7 + c.nq));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  p.q.resize(sz(c.d * c.nh * c.nq));
  for (auto& x : p.q) x = nd(rng);
  p.k_pos.resize(sz(c.n_kv));
  std::iota(p.k_pos.begin(), p.k_pos.end(), 0);
  int32_t max_pos = 0;
  for (int64_t j = 0; j < c.n_kv; ++j) {
    if (c.empty_every > 0 && j % c.empty_every == c.empty_every - 1) p.k_pos[sz(j)] = -1;
    max_pos = std::max(max_pos, p.k_pos[sz(j)]);
  }
  for (int64_t t = 0; t < c.nq; ++t) {
    p.q_pos.push_back(std::max<int32_t>(0, max_pos - static_cast<int32_t>(c.nq - 1 - t)));
  }
  p.params.scale = c.softcap > 0.0f ? 0.5f : 1.0f / std::sqrt(static_cast<float>(c.d));
  p.params.causal = c.causal;
  p.params.sliding_window = c.window;
  p.params.softcap = c.softcap;
  p.n_rows = c.scatter ? 2 * c.n_kv + 3 : c.n_kv;
  std::vector<int32_t> rows(sz(p.n_rows));
  std::iota(rows.begin(), rows.end(), 0);
  if (c.scatter) {
    std::shuffle(rows.begin(), rows.end(), rng);
    p.k_rows.assign(rows.begin(), rows.begin() + c.n_kv);
  }
  std::vector<float> k(sz(c.d * c.nkvh * p.n_rows)), v(sz(c.dv * c.nkvh * p.n_rows));
  for (auto& x : k) x = nd(rng);
  for (auto& x : v) x = nd(rng);
  p.k = quantize_rows(kt, k, c.d);
  p.v = quantize_rows(vt, v, c.dv);
  const size_t krow = head_bytes(kt, c.d) * sz(c.nkvh), vrow = head_bytes(vt, c.dv) * sz(c.nkvh);
  // Poison every row no query sees: unlisted rows and listed keys that are masked for all.
  std::vector<bool> seen(sz(p.n_rows), false);
  for (int64_t j = 0; j < c.n_kv; ++j) {
    for (int32_t qp : p.q_pos) {
      if (graph::ref::attention_visible(qp, p.k_pos[sz(j)], p.params)) {
        seen[sz(c.scatter ? p.k_rows[sz(j)] : j)] = true;
      }
    }
  }
  std::vector<float> vf(sz(c.dv));
  for (int64_t r = 0; r < p.n_rows; ++r) {
    if (!seen[sz(r)]) {
      poison_row(p.k, kt, r, krow);
      poison_row(p.v, vt, r, vrow);
      continue;
    }
    for (int64_t h = 0; h < c.nkvh; ++h) {
      const size_t hb = head_bytes(vt, c.dv);
      EXPECT_TRUE(
          quant::dequantize_row(vt, std::span(p.v).subspan(sz(r) * vrow + sz(h) * hb, hb), vf)
              .ok());
      for (float x : vf) p.vmax = std::max(p.vmax, static_cast<double>(std::fabs(x)));
    }
  }
  return p;
}

std::vector<float> run_ref(const Case& c, const Blocks& p) {
  std::vector<float> out(sz(c.dv * c.nh * c.nq));
  const graph::ref::AttentionDims dims{c.d, c.dv, c.nh, c.nkvh, c.nq, c.n_kv, p.n_rows};
  const Status st = graph::ref::attention_blocks(p.q, {p.kt, p.k}, {p.vt, p.v}, dims, p.q_pos,
                                                 p.k_pos, p.params, {p.k_rows, p.q_seg}, out);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

// Worst |cpu - ref| / max|v| over every kernel set and 1 / 3 threads.
double check(const Case& c, GgmlType kt, GgmlType vt) {
  const Blocks p = make(c, kt, vt);
  const auto want = run_ref(c, p);
  for (float f : want) EXPECT_TRUE(std::isfinite(f)) << c.name << " reference";
  const std::string what =
      c.name + " " + std::string(ggml_type_name(kt)) + "/" + std::string(ggml_type_name(vt));
  double worst = 0.0;
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    Scratch scratch;
    std::vector<const attn::Kernels*> done;
    for (geniex::cpu::Isa isa : geniex::cpu::available_isas()) {
      const attn::Kernels* kr = &attn::kernels_for(isa);
      if (std::find(done.begin(), done.end(), kr) != done.end()) continue;
      done.push_back(kr);
      std::vector<float> got(want.size(), 12345.0f);
      for (int rep = 0; rep < 2; ++rep) {  // reused scratch gives the same answer
        const Status st = attn::attention_with_isa(
            isa, pool, scratch, p.q.data(), KvView{kt, p.k.data()}, KvView{vt, p.v.data()}, c.d,
            c.dv, c.nh, c.nkvh, c.nq, c.n_kv, p.q_pos, p.k_pos, p.params, got.data(),
            KvPaging{p.n_rows, p.k_rows, p.q_seg});
        EXPECT_TRUE(st.ok()) << st.to_string();
      }
      double err = 0.0;
      size_t at = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double e = std::fabs(static_cast<double>(got[i]) - want[i]) / p.vmax;
        if (!(e <= err)) {
          err = std::isfinite(e) ? e : std::numeric_limits<double>::infinity();
          at = i;
        }
      }
      EXPECT_LE(err, kTol) << what << " isa " << geniex::cpu::isa_name(isa) << " threads "
                           << threads << " at " << at << ": got " << got[at] << " want "
                           << want[at];
      worst = std::max(worst, err);
    }
  }
  return worst;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (int64_t d : {64, 128, 256}) {
    for (int64_t n_kv : {1, 31, 33, 200, 1500}) {
      Case c;
      c.d = c.dv = d;
      c.n_kv = n_kv;
      c.name = "decode d" + std::to_string(d) + " n_kv" + std::to_string(n_kv);
      cs.push_back(c);
    }
  }
  Case c;
  c.name = "decode gqa 8/2 window 16 empty scattered";
  c.d = c.dv = 128;
  c.nh = 8;
  c.nkvh = 2;
  c.n_kv = 777;
  c.window = 16;
  c.empty_every = 5;
  c.scatter = true;
  cs.push_back(c);
  c.name = "decode gqa 8/2 scattered";
  c.window = 0;
  c.empty_every = 0;
  cs.push_back(c);
  c = Case{};
  c.name = "decode softcap d 96 dv 32 non-causal";
  c.d = 96;
  c.dv = 32;
  c.n_kv = 300;
  c.softcap = 30.0f;
  c.causal = false;
  cs.push_back(c);
  c = Case{};
  c.name = "decode all slots empty";
  c.n_kv = 40;
  c.empty_every = 1;
  cs.push_back(c);
  for (int64_t nq : {3, 5}) {
    c = Case{};
    c.name = "batch " + std::to_string(nq);
    c.d = c.dv = 128;
    c.nq = nq;
    c.n_kv = 257;
    c.empty_every = 9;
    cs.push_back(c);
  }
  for (int64_t d : {64, 256}) {
    c = Case{};
    c.name = "prefill d" + std::to_string(d);
    c.d = c.dv = d;
    c.nq = c.n_kv = 70;
    cs.push_back(c);
  }
  c = Case{};
  c.name = "prefill chunk gqa 8/2 window 16 empty scattered";
  c.nh = 8;
  c.nkvh = 2;
  c.nq = 48;
  c.n_kv = 400;
  c.window = 16;
  c.empty_every = 11;
  c.scatter = true;
  cs.push_back(c);
  c.name = "prefill softcap non-causal";
  c.nh = c.nkvh = 2;
  c.nq = 33;
  c.n_kv = 90;
  c.window = 0;
  c.empty_every = 0;
  c.scatter = false;
  c.causal = false;
  c.softcap = 20.0f;
  cs.push_back(c);
  return cs;
}

TEST(CpuAttentionBlocks, MatchesReference) {
  const std::pair<GgmlType, GgmlType> types[] = {{GgmlType::kQ8_0, GgmlType::kQ8_0},
                                                 {GgmlType::kQ4_0, GgmlType::kQ4_0},
                                                 {GgmlType::kQ8_0, GgmlType::kQ4_0}};
  double worst = 0.0;
  for (const auto& [kt, vt] : types) {
    for (const Case& c : cases()) worst = std::max(worst, check(c, kt, vt));
  }
  RecordProperty("worst", std::to_string(worst));
  std::printf("worst |cpu - ref| / max|v| = %.3g\n", worst);
}

TEST(CpuAttentionBlocks, SegmentsOfThreeSequences) {
  // One list of three sequences (positions restart at 0 in each), 12 + 1 + 7 queries; the third
  // sequence starts with the first sequence's first 10 rows (a shared prefix).
  Case c;
  c.name = "segments";
  c.nh = 8;
  c.nkvh = 2;
  const int64_t lens[3] = {60, 90, 17}, news[3] = {12, 1, 7};
  c.n_kv = lens[0] + lens[1] + lens[2];
  c.nq = news[0] + news[1] + news[2];
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    Case big = c;
    big.n_kv = lens[0] + lens[1] + (lens[2] - 10);  // distinct rows
    big.nq = c.nq;
    big.causal = false;  // every row seen, so make() poisons none of the distinct rows
    Blocks p = make(big, t, t);
    p.n_rows = big.n_kv;
    p.params.causal = true;
    p.k_pos.clear();
    p.k_rows.clear();
    p.q_pos.clear();
    int32_t next_row = 0;
    for (int s = 0; s < 3; ++s) {
      const auto begin = static_cast<int32_t>(p.k_pos.size());
      for (int64_t j = 0; j < lens[s]; ++j) {
        p.k_pos.push_back(static_cast<int32_t>(j));
        p.k_rows.push_back(s == 2 && j < 10 ? static_cast<int32_t>(j) : next_row++);
      }
      const auto end = static_cast<int32_t>(p.k_pos.size());
      for (int64_t t2 = 0; t2 < news[s]; ++t2) {
        p.q_pos.push_back(static_cast<int32_t>(lens[s] - news[s] + t2));
        p.q_seg.push_back(begin);
        p.q_seg.push_back(end);
      }
    }
    const auto want = run_ref(c, p);
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      Scratch scratch;
      std::vector<float> got(want.size());
      ASSERT_TRUE(attention(pool, scratch, p.q.data(), KvView{t, p.k.data()}, KvView{t, p.v.data()},
                            c.d, c.dv, c.nh, c.nkvh, c.nq, c.n_kv, p.q_pos, p.k_pos, p.params,
                            got.data(), KvPaging{p.n_rows, p.k_rows, p.q_seg})
                      .ok());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_LE(std::fabs(got[i] - want[i]), kTol * p.vmax) << ggml_type_name(t) << " " << i;
      }
    }
  }
}

TEST(CpuAttentionBlocks, DequantKernelsAreBitIdenticalToTheReference) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const size_t n = 32 * 9, bytes = head_bytes(t, static_cast<int64_t>(n));
    std::vector<uint8_t> src(bytes);
    for (auto& b : src) b = static_cast<uint8_t>(byte(rng));
    // Finite scales (f16 exponent below the max): every byte pattern of the quants is covered.
    for (size_t b = 0; b < bytes; b += traits(t).type_size) src[b + 1] &= 0x3F;
    std::vector<float> want(n);
    ASSERT_TRUE(quant::dequantize_row(t, src, want).ok());
    for (geniex::cpu::Isa isa : geniex::cpu::available_isas()) {
      const attn::Kernels& kr = attn::kernels_for(isa);
      std::vector<float> got(n, -1.0f);
      (t == GgmlType::kQ8_0 ? kr.dequant_q8_0 : kr.dequant_q4_0)(src.data(), got.data(),
                                                                 static_cast<int64_t>(n));
      EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0)
          << ggml_type_name(t) << " " << geniex::cpu::isa_name(isa);
    }
  }
}

TEST(CpuAttentionBlocks, RejectsBadTypesAndHeadDims) {
  ThreadPool pool(1);
  Scratch scratch;
  const std::vector<float> q(64);
  const std::vector<uint8_t> kv(1024);
  std::vector<float> out(64);
  const std::vector<int32_t> qp = {0}, kp = {0};
  graph::AttentionParams p;
  auto run = [&](GgmlType kt, GgmlType vt, int64_t d) {
    return attention(pool, scratch, q.data(), KvView{kt, kv.data()}, KvView{vt, kv.data()}, d, d, 1,
                     1, 1, 1, qp, kp, p, out.data());
  };
  EXPECT_TRUE(run(GgmlType::kQ8_0, GgmlType::kQ4_0, 32).ok());
  EXPECT_EQ(run(GgmlType::kQ8_0, GgmlType::kQ8_0, 48).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(GgmlType::kQ4_0, GgmlType::kQ4_0, 16).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(GgmlType::kQ8_0, GgmlType::kF16, 32).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(GgmlType::kF16, GgmlType::kQ4_0, 32).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(GgmlType::kQ4_1, GgmlType::kQ4_1, 32).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geniex::backends::cpu
