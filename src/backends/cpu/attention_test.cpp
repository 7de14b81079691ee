// cpu::attention (op_attention.cpp over the attention_kernels*.cpp sets) against a scalar
// emulation of its numerics contract and against graph::ref::attention, for every kernel set this
// CPU runs, 1 and 3 threads, decode and prefill shapes, GQA, causal / sliding-window masks, empty
// slots and soft-capping.
//
// Bounds (|out - expected| <= tol * max|v|, per element):
// * F32 caches vs graph::ref::attention (all in double): 1e-5. The kernels only reorder f32 sums
//   (and contract them to FMA); the rest is f32 exp vs double exp.
// * F16 caches vs emulate(), which follows the contract step by step (q rounded to f16, f32
//   scores from exact dots, f32 exp, double sum, p = e * (float)(1 / sum) rounded
//   to f16, exact p.v sums):
//   - "grid" inputs (q within 2^-14 of a multiple of 1/4, so f16 rounding lands on it; k on that
//     grid too): every dot is exact in any order, so scores and p are bit-identical and only the
//     f32 p.v summation order differs: 2e-6. A missing q or p rounding fails this by far.
//   - Gaussian inputs: 5e-4. A score a few f32 ulps off (summation order) can move p across an
//     f16 rounding boundary, changing that key's weight by one f16 ulp (2^-11 relative, ~4.9e-4
//     of max|v| for p near 1); rare, and only for a few keys.
// Every K/V row that no query may see (empty slot, after a causal query, outside every window)
// holds NaN, so reading one would poison the output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/isa.h"
#include "core/fp16.h"
#include "graph/ref_ops.h"

namespace geniex::backends::cpu {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

constexpr double kF32Tol = 1e-5;
constexpr double kF16GridTol = 2e-6;
constexpr double kF16Tol = 5e-4;

struct Case {
  std::string name;
  int64_t d = 64, dv = 64, n_head = 4, n_kv_head = 1, n_q = 1, n_kv = 16;
  bool causal = true;
  int32_t window = 0;
  float softcap = 0.0f;
  int empty_every = 0;    // every empty_every-th slot is empty (k_pos -1); 0: none
  bool shuffled = false;  // slots hold positions in a permuted (ring-buffer-like) order
  bool grid = false;      // q and k near / on multiples of 1/4 (exact dots), see the bounds
  bool dense = false;     // for the dense schedule (F32 only; with F16 the tiled one runs)
};

struct Inputs {
  std::vector<float> q, k, v;  // k, v as f32 (for F16: the f16 values, exactly)
  std::vector<uint16_t> k16, v16;
  std::vector<int32_t> q_pos, k_pos;
  graph::AttentionParams params;
};

Inputs make_inputs(const Case& c, bool f16) {
  Inputs in;
  std::mt19937 rng(static_cast<uint32_t>(c.d * 131 + c.n_kv * 7 + c.n_q));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  in.q.resize(sz(c.d * c.n_head * c.n_q));
  for (auto& x : in.q) x = nd(rng);
  in.k.resize(sz(c.d * c.n_kv_head * c.n_kv));
  in.v.resize(sz(c.dv * c.n_kv_head * c.n_kv));
  for (auto& x : in.k) x = nd(rng);
  for (auto& x : in.v) x = nd(rng);
  if (c.grid) {
    std::uniform_int_distribution<int> ud(1, 8);
    std::bernoulli_distribution neg(0.5);
    auto on_grid = [&] { return static_cast<float>(neg(rng) ? -ud(rng) : ud(rng)) / 4.0f; };
    for (auto& x : in.q) x = on_grid() + 1.0f / 16384.0f;  // f16 rounds it back onto the grid
    for (auto& x : in.k) x = on_grid();
  }
  if (f16) {
    for (auto& x : in.k) x = fp16_to_fp32(fp32_to_fp16(x));
    for (auto& x : in.v) x = fp16_to_fp32(fp32_to_fp16(x));
  }
  // Slot positions: 0, 1, ... (permuted if shuffled), some slots empty.
  in.k_pos.resize(sz(c.n_kv));
  for (int64_t j = 0; j < c.n_kv; ++j) in.k_pos[sz(j)] = static_cast<int32_t>(j);
  if (c.shuffled) std::shuffle(in.k_pos.begin(), in.k_pos.end(), rng);
  int32_t max_pos = 0;
  for (int64_t j = 0; j < c.n_kv; ++j) {
    if (c.empty_every > 0 && j % c.empty_every == c.empty_every - 1) in.k_pos[sz(j)] = -1;
    max_pos = std::max(max_pos, in.k_pos[sz(j)]);
  }
  // Queries: the last n_q positions (decode: the newest token); with causal masking, keys of
  // later positions than a query exist only for prefill rows before the last.
  in.q_pos.resize(sz(c.n_q));
  for (int64_t t = 0; t < c.n_q; ++t) {
    in.q_pos[sz(t)] = std::max<int32_t>(0, max_pos - static_cast<int32_t>(c.n_q - 1 - t));
  }
  in.params.scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  in.params.causal = c.causal;
  in.params.sliding_window = c.window;
  in.params.softcap = c.softcap;
  if (c.softcap > 0.0f) in.params.scale = 0.5f;  // large scores, so the cap matters
  // NaN in every row no query may see.
  for (int64_t j = 0; j < c.n_kv; ++j) {
    bool seen = false;
    for (int32_t qp : in.q_pos)
      seen |= graph::ref::attention_visible(qp, in.k_pos[sz(j)], in.params);
    if (seen) continue;
    std::fill_n(in.k.begin() + j * c.n_kv_head * c.d, c.n_kv_head * c.d,
                std::numeric_limits<float>::quiet_NaN());
    std::fill_n(in.v.begin() + j * c.n_kv_head * c.dv, c.n_kv_head * c.dv,
                std::numeric_limits<float>::quiet_NaN());
  }
  if (f16) {
    in.k16.resize(in.k.size());
    in.v16.resize(in.v.size());
    for (size_t i = 0; i < in.k.size(); ++i) in.k16[i] = fp32_to_fp16(in.k[i]);
    for (size_t i = 0; i < in.v.size(); ++i) in.v16[i] = fp32_to_fp16(in.v[i]);
  }
  return in;
}

float round16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

// The F16-cache contract, scalar, with exact (double) dots and p.v sums.
std::vector<float> emulate(const Case& c, const Inputs& in) {
  std::vector<float> out(sz(c.dv * c.n_head * c.n_q));
  const int64_t group = c.n_head / c.n_kv_head;
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(sz(c.n_kv)), qr(sz(c.d));
  std::vector<double> acc(sz(c.dv));
  const auto& p = in.params;
  for (int64_t t = 0; t < c.n_q; ++t) {
    for (int64_t h = 0; h < c.n_head; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < c.d; ++i) qr[sz(i)] = round16(in.q[sz((t * c.n_head + h) * c.d + i)]);
      float mx = ninf;
      for (int64_t j = 0; j < c.n_kv; ++j) {
        s[sz(j)] = ninf;
        if (!graph::ref::attention_visible(in.q_pos[sz(t)], in.k_pos[sz(j)], p)) continue;
        double dot = 0.0;
        for (int64_t i = 0; i < c.d; ++i) {
          dot += static_cast<double>(qr[sz(i)]) * in.k[sz((j * c.n_kv_head + kvh) * c.d + i)];
        }
        auto score = static_cast<float>(dot);
        score =
            p.softcap > 0.0f ? p.softcap * std::tanh(score * p.scale / p.softcap) : score * p.scale;
        s[sz(j)] = score;
        mx = std::max(mx, score);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      if (mx != ninf) {
        double sum = 0.0;
        for (int64_t j = 0; j < c.n_kv; ++j) {
          const float e = s[sz(j)] == ninf ? 0.0f : std::exp(s[sz(j)] - mx);
          s[sz(j)] = e;
          sum += e;
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < c.n_kv; ++j) {
          if (s[sz(j)] == 0.0f) continue;
          const double pj = round16(s[sz(j)] * inv);
          for (int64_t i = 0; i < c.dv; ++i) {
            acc[sz(i)] += pj * in.v[sz((j * c.n_kv_head + kvh) * c.dv + i)];
          }
        }
      }
      for (int64_t i = 0; i < c.dv; ++i) {
        out[sz((t * c.n_head + h) * c.dv + i)] = static_cast<float>(acc[sz(i)]);
      }
    }
  }
  return out;
}

double max_abs_finite(const std::vector<float>& x) {
  double m = 0.0;
  for (float f : x) {
    if (std::isfinite(f)) m = std::max(m, static_cast<double>(std::fabs(f)));
  }
  return m;
}

// Runs the case with every available ISA and the given thread counts; returns the largest
// error seen relative to max|v|.
double check(const Case& c, bool f16, double tol) {
  const Inputs in = make_inputs(c, f16);
  std::vector<float> want;
  if (f16) {
    want = emulate(c, in);
  } else {
    want.resize(sz(c.dv * c.n_head * c.n_q));
    const graph::ref::AttentionDims dims{c.d, c.dv, c.n_head, c.n_kv_head, c.n_q, c.n_kv};
    EXPECT_TRUE(
        graph::ref::attention(in.q, in.k, in.v, dims, in.q_pos, in.k_pos, in.params, want).ok());
  }
  const double vmax = std::max(1e-30, max_abs_finite(in.v));
  const KvView k = f16 ? KvView{GgmlType::kF16, reinterpret_cast<const uint8_t*>(in.k16.data())}
                       : KvView{GgmlType::kF32, reinterpret_cast<const uint8_t*>(in.k.data())};
  const KvView v = f16 ? KvView{GgmlType::kF16, reinterpret_cast<const uint8_t*>(in.v16.data())}
                       : KvView{GgmlType::kF32, reinterpret_cast<const uint8_t*>(in.v.data())};
  double worst = 0.0;
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    Scratch scratch;
    std::vector<const attn::Kernels*> done;
    for (geniex::cpu::Isa isa : geniex::cpu::available_isas()) {
      const attn::Kernels* kr = &attn::kernels_for(isa);
      if (std::find(done.begin(), done.end(), kr) != done.end()) continue;  // same kernel set
      done.push_back(kr);
      std::vector<float> got(want.size(), 12345.0f);
      // Twice on the same scratch: reused buffers give the same answer.
      for (int rep = 0; rep < 2; ++rep) {
        const Status st = attn::attention_with_isa(isa, pool, scratch, in.q.data(), k, v, c.d, c.dv,
                                                   c.n_head, c.n_kv_head, c.n_q, c.n_kv, in.q_pos,
                                                   in.k_pos, in.params, got.data());
        EXPECT_TRUE(st.ok());
      }
      double err = 0.0;
      size_t at = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double e = std::isfinite(got[i]) ? std::fabs(got[i] - want[i]) / vmax
                                               : std::numeric_limits<double>::infinity();
        if (!(e <= err)) {
          err = e;
          at = i;
        }
      }
      EXPECT_LE(err, tol) << c.name << (f16 ? " f16" : " f32") << " isa "
                          << geniex::cpu::isa_name(isa) << " threads " << threads << " at " << at
                          << ": got " << got[at] << " want " << want[at];
      worst = std::max(worst, err);
    }
  }
  return worst;
}

std::string fmt(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  // Decode: one query, long caches, GQA 4/1 (Gemma-like) and 8/2.
  for (int64_t d : {64, 128, 256}) {
    for (int64_t n_kv : {1, 2, 5, 31, 33, 64, 200, 600, 1500}) {
      Case c;
      c.d = c.dv = d;
      c.n_kv = n_kv;
      c.name = "decode d" + std::to_string(d) + " n_kv" + std::to_string(n_kv);
      cs.push_back(c);
    }
  }
  {
    Case c;
    c.name = "decode gqa 8/2";
    c.n_head = 8;
    c.n_kv_head = 2;
    c.d = c.dv = 128;
    c.n_kv = 777;
    cs.push_back(c);
    c.name = "decode gqa 8/2 window 16 shuffled";
    c.window = 16;
    c.shuffled = true;
    cs.push_back(c);
    c.name = "decode mha 8/8 empty";
    c.n_kv_head = 8;
    c.window = 0;
    c.shuffled = false;
    c.empty_every = 3;
    cs.push_back(c);
  }
  for (int32_t window : {16, 512}) {
    Case c;
    c.d = c.dv = 256;
    c.n_kv = 1500;
    c.window = window;
    c.name = "decode window " + std::to_string(window);
    cs.push_back(c);
    c.shuffled = true;
    c.empty_every = 7;
    c.name += " shuffled empty";
    cs.push_back(c);
  }
  {
    Case c;
    c.d = c.dv = 256;
    c.n_kv = 300;
    c.softcap = 30.0f;
    c.name = "decode softcap";
    cs.push_back(c);
    c.name = "decode all slots empty";
    c.softcap = 0.0f;
    c.empty_every = 1;
    cs.push_back(c);
    c.name = "decode d 80, dv 48 (tails)";
    c.empty_every = 5;
    c.d = 80;
    c.dv = 48;
    cs.push_back(c);
    c.name = "decode non-causal";
    c.d = c.dv = 64;
    c.causal = false;
    cs.push_back(c);
  }
  // Small batches of queries (split schedule with several tokens).
  for (int64_t n_q : {2, 3, 5}) {
    Case c;
    c.d = c.dv = 128;
    c.n_q = n_q;
    c.n_kv = 257;
    c.empty_every = 9;
    c.name = "batch " + std::to_string(n_q);
    cs.push_back(c);
  }
  // Prefill: n_q == n_kv (fresh prompt) and a chunk after a cached prefix.
  for (int64_t d : {64, 128, 256}) {
    Case c;
    c.d = c.dv = d;
    c.n_q = c.n_kv = 70;
    c.name = "prefill d" + std::to_string(d);
    cs.push_back(c);
  }
  {
    Case c;
    c.d = c.dv = 64;
    c.n_head = 8;
    c.n_kv_head = 2;
    c.n_q = 48;
    c.n_kv = 400;
    c.name = "prefill chunk gqa 8/2";
    cs.push_back(c);
    c.name = "prefill chunk gqa 8/2 window 16 empty shuffled";
    c.window = 16;
    c.empty_every = 11;
    c.shuffled = true;
    cs.push_back(c);
    c.name = "prefill mha window 512";
    c.n_kv_head = 8;
    c.n_kv = 700;
    c.window = 512;
    c.empty_every = 0;
    c.shuffled = false;
    cs.push_back(c);
    c.name = "prefill softcap non-causal d 80 dv 48";
    c.n_head = c.n_kv_head = 2;
    c.d = 80;
    c.dv = 48;
    c.n_q = 33;
    c.n_kv = 90;
    c.window = 0;
    c.causal = false;
    c.softcap = 20.0f;
    cs.push_back(c);
  }
  // Long non-causal problems with every key visible (a vision encoder): the dense schedule.
  {
    Case c;
    c.causal = false;
    c.n_head = c.n_kv_head = 3;
    c.dense = true;
    c.n_q = c.n_kv = 300;
    c.name = "dense mha 300 x 300";
    cs.push_back(c);
    c.name = "dense gqa 8/2, 5 queries, 333 keys, d 80 dv 48";
    c.n_head = 8;
    c.n_kv_head = 2;
    c.n_q = 5;
    c.n_kv = 333;
    c.d = 80;
    c.dv = 48;
    cs.push_back(c);
    c.name = "dense 256 keys, 1 query";
    c.n_head = c.n_kv_head = 1;
    c.n_q = 1;
    c.n_kv = 256;
    c.d = c.dv = 64;
    cs.push_back(c);
  }
  return cs;
}

TEST(CpuAttention, F32CacheMatchesReference) {
  double worst = 0.0;
  for (const Case& c : cases()) worst = std::max(worst, check(c, false, kF32Tol));
  RecordProperty("worst_f32", fmt(worst));
}

TEST(CpuAttention, F16CacheMatchesContractEmulation) {
  double worst = 0.0;
  for (const Case& c : cases()) worst = std::max(worst, check(c, true, kF16Tol));
  RecordProperty("worst_f16", fmt(worst));
}

TEST(CpuAttention, F16CacheExactScoresMatchContractEmulation) {
  double worst = 0.0;
  for (Case c : cases()) {
    // The dense cases' 300 x 300 p.v sums take the f32 summation-order error past this bound;
    // with an F16 cache they run the tiled schedule, which the other cases cover.
    if (c.dense) continue;
    c.grid = true;
    worst = std::max(worst, check(c, true, kF16GridTol));
  }
  RecordProperty("worst_f16_grid", fmt(worst));
}

TEST(CpuAttention, RejectsBadArguments) {
  ThreadPool pool(1);
  Scratch scratch;
  const std::vector<float> q(8), kv(8);
  std::vector<float> out(8);
  const std::vector<int32_t> qp = {0}, kp = {0};
  graph::AttentionParams p;
  const KvView k{GgmlType::kF32, reinterpret_cast<const uint8_t*>(kv.data())};
  EXPECT_FALSE(
      attention(pool, scratch, q.data(), k, k, 8, 8, 1, 0, 1, 1, qp, kp, p, out.data()).ok());
  EXPECT_FALSE(
      attention(pool, scratch, q.data(), k, k, 8, 8, 3, 2, 1, 1, qp, kp, p, out.data()).ok());
  EXPECT_FALSE(
      attention(pool, scratch, q.data(), k, k, 8, 8, 1, 1, 2, 1, qp, kp, p, out.data()).ok());
  const KvView q8{GgmlType::kQ8_0, k.data};
  EXPECT_FALSE(
      attention(pool, scratch, q.data(), q8, k, 8, 8, 1, 1, 1, 1, qp, kp, p, out.data()).ok());
}

// The kernels' own contracts, per kernel set: a softmax exponential and a Q.K dot take the same
// bits wherever their key sits in a row and whichever rows share the call (batch invariance of
// the engine rests on this), and stay within stated bounds of double arithmetic.
std::vector<const attn::Kernels*> kernel_sets() {
  std::vector<const attn::Kernels*> sets;
  for (geniex::cpu::Isa isa : geniex::cpu::available_isas()) {
    const attn::Kernels* kr = &attn::kernels_for(isa);
    if (std::find(sets.begin(), sets.end(), kr) == sets.end()) sets.push_back(kr);
  }
  return sets;
}

TEST(CpuAttentionKernels, SoftmaxExpIsPositionIndependentAndAccurate) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-30.0f, 0.0f);
  const float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> row(37);
  for (size_t i = 0; i < row.size(); ++i) row[i] = i % 5 == 3 ? -kInf : u(rng);
  row[4] = 0.0f;    // the maximum: e = 1
  row[9] = -95.0f;  // below FLT_MIN after exp: flushed to 0
  const float mx = 0.0f;
  for (const attn::Kernels* kr : kernel_sets()) {
    std::vector<float> first;
    for (size_t off = 0; off < 11; ++off) {
      std::vector<float> s(off + row.size() + 5, -kInf);
      std::copy(row.begin(), row.end(), s.begin() + static_cast<std::ptrdiff_t>(off));
      const double sum = kr->softmax_exp(s.data(), static_cast<int64_t>(s.size()), mx);
      std::vector<float> e(s.begin() + static_cast<std::ptrdiff_t>(off),
                           s.begin() + static_cast<std::ptrdiff_t>(off + row.size()));
      double want_sum = 0.0;
      for (size_t i = 0; i < row.size(); ++i) {
        const double x = std::exp(static_cast<double>(row[i]) - mx);
        if (row[i] == -kInf || x < std::numeric_limits<float>::min()) {
          EXPECT_EQ(e[i], 0.0f) << "element " << i;
        } else {
          EXPECT_LE(std::fabs(e[i] - x),
                    2.0 * std::nextafter(static_cast<float>(x), kInf) - 2.0 * static_cast<float>(x))
              << "element " << i << " (2 ulp)";
        }
        want_sum += e[i];
      }
      EXPECT_NEAR(sum, want_sum, 1e-12 * want_sum) << "offset " << off;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i < off || i >= off + row.size()) {
          EXPECT_EQ(s[i], 0.0f) << "padding " << i;
        }
      }
      if (first.empty()) {
        first = e;
      } else {
        EXPECT_EQ(std::memcmp(first.data(), e.data(), e.size() * sizeof(float)), 0)
            << "offset " << off << " changed some exponential";
      }
    }
  }
}

TEST(CpuAttentionKernels, DotsDoNotDependOnTheirRowAndKeyGroups) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int64_t d : {int64_t{64}, int64_t{70}, int64_t{256}}) {
    const int64_t n_keys = 11, ks = d + 3;  // rows of the cache are wider than one head
    std::vector<float> q(sz(4 * d)), k32(sz(n_keys * ks));
    for (float& x : q) x = g(rng);
    for (float& x : k32) x = fp16_to_fp32(fp32_to_fp16(g(rng)));
    std::vector<uint16_t> k16(k32.size());
    for (size_t i = 0; i < k32.size(); ++i) k16[i] = fp32_to_fp16(k32[i]);
    std::vector<float> keys(sz(n_keys));
    for (int64_t m = 0; m < n_keys; ++m) keys[sz(m)] = static_cast<float>((m * 7) % n_keys);
    for (const attn::Kernels* kr : kernel_sets()) {
      for (bool f16 : {false, true}) {
        auto run = [&](const float* qr, int nr, int64_t m0, int64_t m1, float* s, int64_t ss) {
          if (f16) {
            kr->dots_f16(qr, nr, d, k16.data(), ks, keys.data(), m0, m1, s, ss);
          } else {
            kr->dots_f32(qr, nr, d, k32.data(), ks, keys.data(), m0, m1, s, ss);
          }
        };
        std::vector<float> all(sz(4 * n_keys), 0.0f);
        run(q.data(), 4, 0, n_keys, all.data(), n_keys);
        for (int r = 0; r < 4; ++r) {
          for (int64_t m = 0; m < n_keys; ++m) {
            double want = 0.0;
            const float* kr_row = k32.data() + static_cast<int64_t>(keys[sz(m)]) * ks;
            double mag = 0.0;
            for (int64_t i = 0; i < d; ++i) {
              want += static_cast<double>(q[sz(r * d + i)]) * kr_row[i];
              mag += std::fabs(static_cast<double>(q[sz(r * d + i)]) * kr_row[i]);
            }
            EXPECT_NEAR(all[sz(r * n_keys + m)], want, 1e-6 * mag) << "d " << d << " r " << r;
          }
        }
        // One row at a time, rows 1..3 as a block of 3, and odd key ranges: the same bits.
        for (int r = 0; r < 4; ++r) {
          for (int64_t m0 : {int64_t{0}, int64_t{3}, int64_t{10}}) {
            std::vector<float> one(sz(n_keys), 0.0f);
            run(q.data() + r * d, 1, m0, n_keys, one.data(), n_keys);
            for (int64_t m = m0; m < n_keys; ++m) {
              EXPECT_EQ(one[sz(m)], all[sz(r * n_keys + m)])
                  << "d " << d << " row " << r << " key " << m << " from " << m0;
            }
          }
        }
        std::vector<float> three(sz(3 * n_keys), 0.0f);
        run(q.data() + d, 3, 1, n_keys, three.data(), n_keys);
        for (int r = 0; r < 3; ++r) {
          for (int64_t m = 1; m < n_keys; ++m) {
            EXPECT_EQ(three[sz(r * n_keys + m)], all[sz((r + 1) * n_keys + m)]);
          }
        }
      }
    }
  }
}

// The token-major decode kernels (all kv heads of a key's row at once) give every dot and every
// p.v element the bits of the per-head kernels, for F32 and F16 caches, head dims with and without
// a tail, a (head, row) count that is not a multiple of 4, scattered key rows and runs of heads.
TEST(CpuAttentionKernels, TokenMajorKernelsGiveThePerHeadBits) {
  std::mt19937 rng(23);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int64_t d : {int64_t{64}, int64_t{70}}) {
    const int64_t n_kv_head = 3, n_rows = 2, n_keys = 13, ks = n_kv_head * d;
    const int64_t all_rows = n_kv_head * n_rows, ns = n_keys + 5;
    std::vector<float> q(sz(all_rows * d)), k32(sz(n_keys * ks)), p(sz(all_rows * ns));
    for (float& x : q) x = g(rng);
    for (float& x : k32) x = fp16_to_fp32(fp32_to_fp16(g(rng)));
    for (float& x : p) x = std::fabs(g(rng)) * 0.1f;
    std::vector<uint16_t> k16(k32.size());
    for (size_t i = 0; i < k32.size(); ++i) k16[i] = fp32_to_fp16(k32[i]);
    std::vector<float> keys(sz(n_keys));
    for (int64_t m = 0; m < n_keys; ++m) keys[sz(m)] = static_cast<float>((m * 5) % n_keys);
    for (const attn::Kernels* kr : kernel_sets()) {
      for (bool f16 : {false, true}) {
        // Q.K: head_dots over keys [2, n_keys) against dots_* per head.
        std::vector<float> tm(sz(all_rows * ns), -1.0f), ph(tm.size(), -1.0f);
        if (f16) {
          kr->head_dots_f16(q.data(), n_rows, n_kv_head, d, k16.data(), ks, keys.data(), 2, n_keys,
                            tm.data(), ns);
        } else {
          kr->head_dots_f32(q.data(), n_rows, n_kv_head, d, k32.data(), ks, keys.data(), 2, n_keys,
                            tm.data(), ns);
        }
        for (int64_t h = 0; h < n_kv_head; ++h) {
          const float* qh = q.data() + h * n_rows * d;
          float* sh = ph.data() + h * n_rows * ns;
          if (f16) {
            kr->dots_f16(qh, n_rows, d, k16.data() + h * d, ks, keys.data(), 2, n_keys, sh, ns);
          } else {
            kr->dots_f32(qh, n_rows, d, k32.data() + h * d, ks, keys.data(), 2, n_keys, sh, ns);
          }
        }
        for (size_t i = 0; i < tm.size(); ++i) {
          ASSERT_EQ(tm[i], ph[i]) << "dots, d " << d << " f16 " << f16 << " at " << i;
        }
        // p.v: heads [1, 3) in one run against pv_* per head (V = the K rows).
        std::vector<float> acc_tm(sz(all_rows * d), 0.5f), acc_ph(acc_tm.size(), 0.5f);
        if (f16) {
          kr->pv_heads_f16(p.data(), ns, n_rows, 1, 3, keys.data(), 0, n_keys, k16.data(), ks, d,
                           acc_tm.data());
        } else {
          kr->pv_heads_f32(p.data(), ns, n_rows, 1, 3, keys.data(), 0, n_keys, k32.data(), ks, d,
                           acc_tm.data());
        }
        for (int64_t h = 1; h < 3; ++h) {
          const float* pr = p.data() + h * n_rows * ns;
          float* ah = acc_ph.data() + h * n_rows * d;
          if (f16) {
            kr->pv_f16(pr, ns, n_rows, keys.data(), 0, n_keys, k16.data() + h * d, ks, d, ah, d);
          } else {
            kr->pv_f32(pr, ns, n_rows, keys.data(), 0, n_keys, k32.data() + h * d, ks, d, ah, d);
          }
        }
        for (size_t i = 0; i < acc_tm.size(); ++i) {
          ASSERT_EQ(acc_tm[i], acc_ph[i]) << "p.v, d " << d << " f16 " << f16 << " at " << i;
        }
      }
    }
  }
}

TEST(CpuAttentionKernels, DenseScoresDoNotDependOnTheirRowGroups) {
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (int64_t d : {int64_t{64}, int64_t{80}}) {
    const int64_t n_panels = 3, ns = n_panels * attn::kDenseKeys + 5;
    std::vector<float> q(sz(4 * d)), kp(sz(n_panels * d * attn::kDenseKeys));
    for (float& x : q) x = g(rng);
    for (float& x : kp) x = g(rng);
    const float mul = 0.125f;
    for (const attn::Kernels* kr : kernel_sets()) {
      std::vector<float> all(sz(4 * ns), 7.0f);
      kr->dense_scores(q.data(), 4, d, kp.data(), n_panels, mul, all.data(), ns);
      for (int r = 0; r < 4; ++r) {
        for (int64_t m = 0; m < n_panels * attn::kDenseKeys; ++m) {
          const int64_t b = m / attn::kDenseKeys, j = m % attn::kDenseKeys;
          double want = 0.0, mag = 0.0;
          for (int64_t i = 0; i < d; ++i) {
            const double x =
                static_cast<double>(q[sz(r * d + i)]) * kp[sz((b * d + i) * attn::kDenseKeys + j)];
            want += x;
            mag += std::fabs(x);
          }
          EXPECT_NEAR(all[sz(r * ns + m)], want * mul, 1e-6 * mag * mul) << "d " << d;
        }
        for (int64_t m = n_panels * attn::kDenseKeys; m < ns; ++m) {
          EXPECT_EQ(all[sz(r * ns + m)], 7.0f) << "wrote past the panels";
        }
        std::vector<float> one(sz(ns), 0.0f);
        kr->dense_scores(q.data() + r * d, 1, d, kp.data(), n_panels, mul, one.data(), ns);
        EXPECT_EQ(std::memcmp(one.data(), all.data() + r * ns,
                              sz(n_panels * attn::kDenseKeys) * sizeof(float)),
                  0)
            << "row " << r << " alone differs";
      }
      std::vector<float> x(77);
      for (float& e : x) e = g(rng);
      x[70] = 9.0f;
      EXPECT_EQ(kr->row_max(x.data(), 77), 9.0f);
      EXPECT_EQ(kr->row_max(x.data(), 3), std::max({x[0], x[1], x[2]}));
    }
  }
}

// A row of the dense schedule gives the same bits alone as among 300 queries, with 1 or 3
// threads: its tile and its neighbours do not matter.
TEST(CpuAttention, DenseRowsDoNotDependOnTheOtherQueries) {
  Case c;
  c.causal = false;
  c.n_head = c.n_kv_head = 2;
  c.n_q = c.n_kv = 300;
  const Inputs in = make_inputs(c, false);
  const KvView k{GgmlType::kF32, reinterpret_cast<const uint8_t*>(in.k.data())};
  const KvView v{GgmlType::kF32, reinterpret_cast<const uint8_t*>(in.v.data())};
  const int64_t row = c.n_head * c.dv;
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    Scratch scratch;
    std::vector<float> all(sz(c.n_q * row));
    ASSERT_TRUE(attention(pool, scratch, in.q.data(), k, v, c.d, c.dv, c.n_head, c.n_kv_head, c.n_q,
                          c.n_kv, in.q_pos, in.k_pos, in.params, all.data())
                    .ok());
    for (int64_t t : {int64_t{0}, int64_t{63}, int64_t{64}, int64_t{299}}) {
      std::vector<float> one(sz(row));
      ASSERT_TRUE(attention(pool, scratch, in.q.data() + t * c.n_head * c.d, k, v, c.d, c.dv,
                            c.n_head, c.n_kv_head, 1, c.n_kv,
                            std::span<const int32_t>(in.q_pos).subspan(sz(t), 1), in.k_pos,
                            in.params, one.data())
                      .ok());
      EXPECT_EQ(std::memcmp(one.data(), all.data() + t * row, sz(row) * sizeof(float)), 0)
          << "query " << t << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace geniex::backends::cpu
