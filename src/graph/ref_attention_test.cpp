// Reference attention against a separate straightforward implementation with explicit masks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "graph/ref_ops.h"

namespace geniex::graph {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Case {
  ref::AttentionDims dims;
  std::vector<int32_t> q_pos, k_pos;
  AttentionParams params;
};

// mask[i][j] = 1 when query i may see key j, written out from the rules, not from the library.
std::vector<std::vector<int>> explicit_mask(const Case& c) {
  std::vector<std::vector<int>> m(c.q_pos.size(), std::vector<int>(c.k_pos.size(), 1));
  for (size_t i = 0; i < c.q_pos.size(); ++i) {
    for (size_t j = 0; j < c.k_pos.size(); ++j) {
      if (c.k_pos[j] < 0) m[i][j] = 0;
      if (c.params.causal && c.k_pos[j] > c.q_pos[i]) m[i][j] = 0;
      if (c.params.sliding_window > 0 && c.q_pos[i] - c.k_pos[j] >= c.params.sliding_window) {
        m[i][j] = 0;
      }
    }
  }
  return m;
}

// Straightforward float attention: per head, scores matrix, softmax over visible keys, times V.
std::vector<float> naive(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                         const std::vector<float>& v) {
  const auto& d = c.dims;
  const auto mask = explicit_mask(c);
  std::vector<float> out(size_t(d.head_dim_v * d.n_head * d.n_q), 0.0f);
  for (int64_t h = 0; h < d.n_head; ++h) {
    const int64_t g = h * d.n_kv_head / d.n_head;  // GQA: consecutive query heads share a kv head
    for (int64_t i = 0; i < d.n_q; ++i) {
      std::vector<float> s(size_t(d.n_kv));
      float mx = -1e30f;
      for (int64_t j = 0; j < d.n_kv; ++j) {
        float dot = 0;
        for (int64_t e = 0; e < d.head_dim; ++e) {
          dot += q[size_t((i * d.n_head + h) * d.head_dim + e)] *
                 k[size_t((j * d.n_kv_head + g) * d.head_dim + e)];
        }
        s[size_t(j)] = dot * c.params.scale;
        if (c.params.softcap > 0)
          s[size_t(j)] = c.params.softcap * std::tanh(s[size_t(j)] / c.params.softcap);
        if (mask[size_t(i)][size_t(j)]) mx = std::max(mx, s[size_t(j)]);
      }
      float sum = 0;
      for (int64_t j = 0; j < d.n_kv; ++j) {
        s[size_t(j)] = mask[size_t(i)][size_t(j)] ? std::exp(s[size_t(j)] - mx) : 0.0f;
        sum += s[size_t(j)];
      }
      for (int64_t j = 0; j < d.n_kv; ++j) {
        for (int64_t e = 0; e < d.head_dim_v; ++e) {
          out[size_t((i * d.n_head + h) * d.head_dim_v + e)] +=
              s[size_t(j)] / sum * v[size_t((j * d.n_kv_head + g) * d.head_dim_v + e)];
        }
      }
    }
  }
  return out;
}

void check_case(const Case& c, uint32_t seed) {
  const auto& d = c.dims;
  const auto q = random_vec(size_t(d.head_dim * d.n_head * d.n_q), seed);
  const auto k = random_vec(size_t(d.head_dim * d.n_kv_head * d.n_kv), seed + 1);
  auto v = random_vec(size_t(d.head_dim_v * d.n_kv_head * d.n_kv), seed + 2);
  std::vector<float> out(size_t(d.head_dim_v * d.n_head * d.n_q));
  ASSERT_TRUE(ref::attention(q, k, v, d, c.q_pos, c.k_pos, c.params, out).ok());
  const auto want = naive(c, q, k, v);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 2e-5) << i;

  // Masked keys carry zero weight: making their values huge must not change any output.
  const auto mask = explicit_mask(c);
  for (int64_t j = 0; j < d.n_kv; ++j) {
    bool seen = false;
    for (int64_t i = 0; i < d.n_q; ++i) seen = seen || mask[size_t(i)][size_t(j)];
    if (seen) continue;
    for (int64_t e = 0; e < d.head_dim_v * d.n_kv_head; ++e) {
      v[size_t(j * d.head_dim_v * d.n_kv_head + e)] = 1e30f;
    }
  }
  std::vector<float> out2(out.size());
  ASSERT_TRUE(ref::attention(q, k, v, d, c.q_pos, c.k_pos, c.params, out2).ok());
  EXPECT_EQ(out, out2);
}

TEST(RefAttention, CausalPrefill) {
  Case c{{8, 8, 2, 2, 5, 5}, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}, {}};
  c.params.scale = 1.0f / std::sqrt(8.0f);
  check_case(c, 10);
}

TEST(RefAttention, GqaDecodeWithCache) {
  // 6 query heads share 2 kv heads; one new token at position 6 over 7 cached keys.
  Case c{{16, 8, 6, 2, 1, 7}, {6}, {0, 1, 2, 3, 4, 5, 6}, {}};
  c.params.scale = 0.25f;
  check_case(c, 20);
}

TEST(RefAttention, SlidingWindowAndPaddedSlots) {
  // Window 3: query at 7 sees keys 5, 6, 7 only; slot with position -1 is empty.
  Case c{{4, 4, 4, 1, 3, 9}, {5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7, -1}, {}};
  c.params.sliding_window = 3;
  check_case(c, 30);
}

TEST(RefAttention, NonCausalWithSoftcap) {
  Case c{{8, 4, 2, 1, 3, 4}, {0, 1, 2}, {0, 1, 2, 3}, {}};
  c.params.causal = false;
  c.params.softcap = 2.0f;
  c.params.scale = 3.0f;  // large scores so the cap matters
  check_case(c, 40);
}

TEST(RefAttention, MaskedWeightsAreExactlyZero) {
  // One-hot values: output element j is exactly key j's weight.
  ref::AttentionDims d{2, 4, 1, 1, 1, 4};
  const std::vector<float> q = {1, 1};
  const std::vector<float> k = {1, 0, 0, 1, 1, 1, 5, 5};
  const std::vector<float> v = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const std::vector<int32_t> qp = {2}, kp = {0, 1, 2, 3};
  AttentionParams p;
  p.sliding_window = 2;  // hides key 0; causal hides key 3
  std::vector<float> out(4);
  ASSERT_TRUE(ref::attention(q, k, v, d, qp, kp, p, out).ok());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_NEAR(out[1], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(out[1] + out[2], 1.0, 1e-7);
  // A query that sees nothing gets zeros, not NaN.
  const std::vector<int32_t> none = {-1, -1, -1, -1};
  ASSERT_TRUE(ref::attention(q, k, v, d, qp, none, p, out).ok());
  for (float o : out) EXPECT_EQ(o, 0.0f);
}

TEST(RefAttention, PagedRowsAndSegmentsEqualEachSequenceGathered) {
  // Two sequences in one call over 8 state rows (d = 4, one kv head): A's keys (positions 0..2)
  // at rows 6, 1, 4; B's (positions 0, 1) at rows 6 (a prefix shared with A) and 0. Rows no
  // sequence uses hold NaN.
  const int64_t d = 4, n_rows = 8;
  const auto q = random_vec(size_t(d * 2 * 3), 50);  // 2 heads, 3 queries (A: 2, B: 1)
  auto k = random_vec(size_t(d * n_rows), 51);
  auto v = random_vec(size_t(d * n_rows), 52);
  for (int64_t r : {2, 3, 5, 7}) {
    for (int64_t i = 0; i < d; ++i) k[size_t(r * d + i)] = v[size_t(r * d + i)] = NAN;
  }
  const std::vector<int32_t> k_rows = {6, 1, 4, 6, 0};
  const std::vector<int32_t> k_pos = {0, 1, 2, 0, 1};
  const std::vector<int32_t> q_pos = {1, 2, 1};
  const std::vector<int32_t> q_seg = {0, 3, 0, 3, 3, 5};
  AttentionParams p;
  p.scale = 0.5f;
  ref::AttentionDims dims{d, d, 2, 1, 3, 5, n_rows};
  std::vector<float> out(size_t(d * 2 * 3));
  ASSERT_TRUE(ref::attention(q, k, v, dims, q_pos, k_pos, p, {k_rows, q_seg}, out).ok());
  // Each sequence alone over its gathered rows.
  auto gather = [&](const std::vector<float>& src, std::vector<int32_t> rows) {
    std::vector<float> g;
    for (int32_t r : rows) g.insert(g.end(), src.begin() + r * d, src.begin() + (r + 1) * d);
    return g;
  };
  struct Seq {
    std::vector<int32_t> rows, k_pos, q_pos;
    size_t q0, nq;
  };
  for (const Seq& s : {Seq{{6, 1, 4}, {0, 1, 2}, {1, 2}, 0, 2}, Seq{{6, 0}, {0, 1}, {1}, 2, 1}}) {
    const auto n = static_cast<int64_t>(s.rows.size());
    const auto nq = static_cast<int64_t>(s.nq);
    std::vector<float> qs(q.begin() + long(s.q0 * 2 * d), q.begin() + long((s.q0 + s.nq) * 2 * d));
    std::vector<float> want(size_t(d * 2 * nq));
    ASSERT_TRUE(ref::attention(qs, gather(k, s.rows), gather(v, s.rows), {d, d, 2, 1, nq, n},
                               s.q_pos, s.k_pos, p, want)
                    .ok());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(out[s.q0 * 2 * d + i], want[i]) << "query row " << s.q0 << " + " << i;
    }
  }
  // Out-of-range rows and segments are kOutOfRange; inconsistent sizes kInvalidArgument.
  auto code = [&](std::vector<int32_t> rows, std::vector<int32_t> seg) {
    return ref::attention(q, k, v, dims, q_pos, k_pos, p, {rows, seg}, out).code();
  };
  EXPECT_EQ(code({6, 1, 8, 6, 0}, q_seg), StatusCode::kOutOfRange);
  EXPECT_EQ(code({6, 1, -1, 6, 0}, q_seg), StatusCode::kOutOfRange);
  EXPECT_EQ(code(k_rows, {0, 3, 0, 3, 3, 6}), StatusCode::kOutOfRange);
  EXPECT_EQ(code(k_rows, {0, 3, 0, 3, 4, 3}), StatusCode::kOutOfRange);
  EXPECT_EQ(code(k_rows, {0, 3, 0, 3}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({6, 1, 4, 6}, q_seg), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({}, q_seg), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({}, {}), StatusCode::kInvalidArgument);  // 8 rows but 5 keys, no k_rows
}

TEST(RefAttention, RejectsBadDims) {
  ref::AttentionDims d{2, 2, 3, 2, 1, 1};
  std::vector<float> q(6), k(4), v(4), out(6);
  const std::vector<int32_t> p = {0};
  EXPECT_FALSE(ref::attention(q, k, v, d, p, p, {}, out).ok());
  d.n_head = 4;
  EXPECT_FALSE(ref::attention(q, k, v, d, p, p, {}, out).ok());  // sizes now wrong
}

}  // namespace
}  // namespace geniex::graph
