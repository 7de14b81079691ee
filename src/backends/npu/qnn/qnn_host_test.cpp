// The QNN HTP plugin's host work (qnn_host.h) on its own, no runtime needed: the attention mask
// rules and their errors, the key-list gather (rows this step rewrites or nobody sees are zeros,
// the last writer wins, out-of-range rows / slots refused), CacheWrite's scatter (F16 RNE, checks
// before writing) and RoPE as x * cos + rot(x) * sin against the reference RoPE.
#include "backends/npu/qnn/qnn_host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "graph/ref_ops.h"

namespace geniex::npu_qnn {
namespace {

TEST(QnnHost, AttentionMaskFollowsCausalWindowEmptySlotsAndSegments) {
  AttentionMask m;
  m.tq = 2;
  m.tk = 5;
  m.causal = true;
  m.window = 2;
  const std::vector<int32_t> q_pos = {3, 4}, k_pos = {0, 2, 3, 4, -1};
  std::vector<float> mask(10), any(2);
  std::vector<uint8_t> seen;
  ASSERT_TRUE(fill_attention_mask(m, q_pos, k_pos, {}, mask.data(), any.data(), seen).ok());
  // query 3 (window 2): keys at 2, 3; query 4: keys at 3, 4; never the empty slot or position 0.
  const std::vector<float> want = {kMasked, 0,       0, kMasked, kMasked,
                                   kMasked, kMasked, 0, 0,       kMasked};
  EXPECT_EQ(mask, want);
  EXPECT_EQ(any, (std::vector<float>{1, 1}));
  EXPECT_EQ(seen, (std::vector<uint8_t>{0, 1, 1, 1, 0}));
  // Segments: query 0 sees entries [0, 2), query 1 an empty one -> no key at all.
  m.window = 0;
  const std::vector<int32_t> seg = {0, 2, 3, 3};
  ASSERT_TRUE(fill_attention_mask(m, q_pos, k_pos, seg, mask.data(), any.data(), seen).ok());
  EXPECT_EQ(any, (std::vector<float>{1, 0}));
  EXPECT_EQ(seen, (std::vector<uint8_t>{1, 1, 0, 0, 0}));
  const std::vector<int32_t> bad = {0, 2, 4, 6};  // end past the list
  const Status s = fill_attention_mask(m, q_pos, k_pos, bad, mask.data(), any.data(), seen);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
}

TEST(QnnHost, GatherZeroesRewrittenAndUnseenRowsAndSelectsTheLastWriter) {
  KeyGather g;
  g.tk = 4;
  g.rows = 6;
  g.row_elems = 2;
  g.type = GgmlType::kF16;
  g.tokens = 3;
  std::vector<uint16_t> state(12);
  for (size_t i = 0; i < state.size(); ++i) state[i] = fp32_to_fp16(static_cast<float>(i));
  state[10] = state[11] = 0x7E00;  // NaN in row 5, which no query sees
  const std::vector<int32_t> rows = {1, 4, 5, 2}, slots = {4, 0, 4};  // token 2 rewrites row 4
  const std::vector<uint8_t> seen = {1, 1, 0, 1};
  std::vector<float> old(8, -1), sel(12, -1);
  ASSERT_TRUE(gather_keys(g, reinterpret_cast<const uint8_t*>(state.data()), rows, slots, seen,
                          old.data(), sel.data())
                  .ok());
  EXPECT_EQ(old, (std::vector<float>{2, 3, 0, 0, 0, 0, 4, 5}));
  EXPECT_EQ(sel, (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  const std::vector<int32_t> out_row = {1, 6, 5, 2};
  EXPECT_EQ(gather_keys(g, reinterpret_cast<const uint8_t*>(state.data()), out_row, slots, seen,
                        old.data(), sel.data())
                .code(),
            StatusCode::kOutOfRange);
  const std::vector<int32_t> out_slot = {4, -1, 0};
  EXPECT_EQ(gather_keys(g, reinterpret_cast<const uint8_t*>(state.data()), rows, out_slot, seen,
                        old.data(), sel.data())
                .code(),
            StatusCode::kOutOfRange);
}

TEST(QnnHost, ScatterRoundsToF16AndChecksEverySlotFirst) {
  KeyGather g;
  g.rows = 3;
  g.row_elems = 2;
  g.type = GgmlType::kF16;
  g.tokens = 2;
  std::vector<uint16_t> state(6, 0);
  const float halfway = 1.0f + 1.0f / 2048.0f;  // exactly between two f16 values: to even (1.0)
  const std::vector<float> src = {halfway, 2.5f, -3.0f, 65504.0f};
  ASSERT_TRUE(scatter_rows(g, std::vector<int32_t>{2, 0}, src.data(),
                           reinterpret_cast<uint8_t*>(state.data()))
                  .ok());
  EXPECT_EQ(state[4], fp32_to_fp16(1.0f));
  EXPECT_EQ(fp16_to_fp32(state[5]), 2.5f);
  EXPECT_EQ(fp16_to_fp32(state[0]), -3.0f);
  const std::vector<uint16_t> before = state;
  EXPECT_EQ(scatter_rows(g, std::vector<int32_t>{1, 3}, src.data(),
                         reinterpret_cast<uint8_t*>(state.data()))
                .code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(state, before);  // nothing written
}

TEST(QnnHost, RopeFromTablesEqualsTheReference) {
  for (bool neox : {false, true}) {
    for (int64_t n_dims : {int64_t{16}, int64_t{8}}) {
      RopeTables r;
      r.d = 16;
      r.n_dims = n_dims;
      r.tokens = 3;
      r.neox = neox;
      r.base = 10000.0f;
      r.freq_scale = 0.5f;
      r.freq_factors.assign(static_cast<size_t>(n_dims / 2), 1.5f);
      const int64_t heads = 2;
      const std::vector<int32_t> pos = {0, 7, 300};
      std::mt19937 rng(5);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> x(static_cast<size_t>(r.d * heads * r.tokens));
      for (float& v : x) v = nd(rng);
      graph::RopeParams p;
      p.mode = neox ? graph::RopeMode::kNeox : graph::RopeMode::kNormal;
      p.n_dims = static_cast<int32_t>(n_dims);
      p.base = r.base;
      p.freq_scale = r.freq_scale;
      std::vector<float> want(x.size());
      ASSERT_TRUE(graph::ref::rope(x, r.d, heads, r.tokens, pos, p, r.freq_factors, want).ok());
      std::vector<float> cos(static_cast<size_t>(r.tokens * r.d)), sin(cos.size());
      fill_rope_tables(r, pos, cos.data(), sin.data());
      const auto perm = rope_permutation(r);
      for (int64_t t = 0; t < r.tokens; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
          const float* xr = x.data() + (t * heads + h) * r.d;
          for (int64_t i = 0; i < r.d; ++i) {
            const float y =
                xr[i] * cos[static_cast<size_t>(t * r.d + i)] +
                xr[perm[static_cast<size_t>(i)]] * sin[static_cast<size_t>(t * r.d + i)];
            EXPECT_NEAR(y, want[static_cast<size_t>((t * heads + h) * r.d + i)], 1e-5)
                << "neox " << neox << " n_dims " << n_dims << " t " << t << " i " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace geniex::npu_qnn
