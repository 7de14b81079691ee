// A small two-layer transformer (norm -> q/k/v matmuls -> rope -> cache write -> attention ->
// output matmul -> add; norm -> gate/up matmuls -> GLU -> down matmul -> add), run as a 128-token
// prefill and then a one-token decode on the reference NPU and on graph::run_reference, each with
// its own F16 KV states.
//
// Bound: NMSE of the final hidden state <= 1e-3 for both runs (int8 matmuls through two layers;
// measured values are printed). The decode run must see the state the prefill wrote: the same
// decode step over empty (zero) caches differs from the reference by far more (NMSE > 1e-2).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/npu/npu_test_util.h"

namespace geniex::backends::npu_test {
namespace {

using graph::Bindings;
using graph::Graph;
using graph::make_desc;
using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

constexpr GgmlType kF32 = GgmlType::kF32;
constexpr GgmlType kF16 = GgmlType::kF16;
constexpr int64_t kE = 64, kD = 16, kHq = 4, kHkv = 2, kF = 128, kRows = 256, kLayers = 2;
constexpr int64_t kKeys = 160;  // key list length: cached + new tokens, padded
constexpr double kBound = 1e-3;

struct Weights {
  std::vector<std::vector<uint8_t>> mats;  // per layer: q, k, v, o, gate, up, down
  std::vector<std::vector<float>> norms;   // per layer: attn norm, ffn norm
};

Weights make_weights() {
  Weights w;
  uint32_t seed = 100;
  for (int64_t l = 0; l < kLayers; ++l) {
    const int64_t shapes[7][2] = {{kE, kHq * kD}, {kE, kHkv * kD}, {kE, kHkv * kD}, {kHq * kD, kE},
                                  {kE, kF},       {kE, kF},        {kF, kE}};
    for (const auto& s : shapes) {  // sigma 1/sqrt(k), as trained layers keep activations ~1
      const float sigma = 1.0f / std::sqrt(static_cast<float>(s[0]));
      w.mats.push_back(make_weight(GgmlType::kQ4_0, s[0], s[1], seed++, sigma));
    }
    for (int i = 0; i < 2; ++i) {
      auto n = quant::testing::gaussian(kE, 0.1f, seed++);
      for (float& v : n) v += 1.0f;
      w.norms.push_back(n);
    }
  }
  return w;
}

// The graph of one step of `tokens` tokens at positions [start, start + tokens): inputs x, pos,
// slots, key positions and rows; states bound by the caller.
struct Step {
  Graph g;
  Bindings b;
  NodeId out = 0;
  std::vector<NodeId> states;  // k, v per layer
  std::vector<float> x;
  std::vector<int32_t> pos, kpos, krows;
};

std::unique_ptr<Step> build(const Weights& w, int64_t tokens, int32_t start, uint32_t seed) {
  auto s = std::make_unique<Step>();
  Graph& g = s->g;
  g.set_batch_tokens(static_cast<int32_t>(tokens));
  s->x = quant::testing::gaussian(static_cast<size_t>(kE * tokens), 1.0f, seed);
  s->pos = iota_i32(tokens, start);
  for (int32_t i = 0; i < start + tokens; ++i) {
    s->kpos.push_back(i);
    s->krows.push_back(i);
  }
  while (static_cast<int64_t>(s->kpos.size()) < kKeys) {
    s->kpos.push_back(-1);
    s->krows.push_back(0);
  }
  NodeId x = g.add_input(make_desc(kF32, kE, tokens), "x");
  s->b.bind_input(x, std::span<const float>(s->x));
  const NodeId pos = g.add_input(make_desc(GgmlType::kI32, tokens), "pos");
  s->b.bind_input(pos, std::span<const int32_t>(s->pos));
  const NodeId kpos = g.add_input(make_desc(GgmlType::kI32, kKeys), "kpos");
  s->b.bind_input(kpos, std::span<const int32_t>(s->kpos));
  const NodeId krows = g.add_input(make_desc(GgmlType::kI32, kKeys), "krows");
  s->b.bind_input(krows, std::span<const int32_t>(s->krows));
  auto mat = [&](int64_t l, int i, int64_t k, int64_t n) {
    const NodeId id = g.add_weight(make_desc(GgmlType::kQ4_0, k, n), "w");
    s->b.bind_weight(id, GgmlType::kQ4_0, w.mats[static_cast<size_t>(l * 7 + i)]);
    return id;
  };
  auto norm = [&](int64_t l, int i, NodeId in) {
    const NodeId id = g.add_weight(make_desc(kF32, kE), "norm");
    s->b.bind_weight(id, kF32, bytes_of(w.norms[static_cast<size_t>(l * 2 + i)]));
    return op(g, OpKind::kRmsNorm, {in, id});
  };
  auto reshape = [&](NodeId in, int64_t a, int64_t b2, int64_t c) {
    OpParams p;
    p.ne = {a, b2, c, 1};
    return op(g, OpKind::kReshape, {in}, p);
  };
  OpParams rope;
  rope.rope.mode = graph::RopeMode::kNeox;
  OpParams attn;
  attn.attn.scale = 0.25f;
  for (int64_t l = 0; l < kLayers; ++l) {
    const NodeId ks = g.add_state(make_desc(kF16, kD, kHkv, kRows), "k_cache");
    const NodeId vs = g.add_state(make_desc(kF16, kD, kHkv, kRows), "v_cache");
    s->states.push_back(ks);
    s->states.push_back(vs);
    const NodeId h = norm(l, 0, x);
    const NodeId q =
        op(g, OpKind::kRope,
           {reshape(op(g, OpKind::kMatMul, {mat(l, 0, kE, kHq * kD), h}), kD, kHq, tokens), pos},
           rope);
    const NodeId k =
        op(g, OpKind::kRope,
           {reshape(op(g, OpKind::kMatMul, {mat(l, 1, kE, kHkv * kD), h}), kD, kHkv, tokens), pos},
           rope);
    const NodeId v =
        reshape(op(g, OpKind::kMatMul, {mat(l, 2, kE, kHkv * kD), h}), kD, kHkv, tokens);
    const NodeId kc = op(g, OpKind::kCacheWrite, {ks, k, pos});  // slot = position
    const NodeId vc = op(g, OpKind::kCacheWrite, {vs, v, pos});
    const NodeId a = op(g, OpKind::kAttention, {q, kc, vc, pos, kpos, krows}, attn);
    const NodeId o =
        op(g, OpKind::kMatMul, {mat(l, 3, kHq * kD, kE), reshape(a, kHq * kD, tokens, 1)});
    x = op(g, OpKind::kAdd, {x, o});
    const NodeId h2 = norm(l, 1, x);
    const NodeId gate = op(g, OpKind::kMatMul, {mat(l, 4, kE, kF), h2});
    const NodeId up = op(g, OpKind::kMatMul, {mat(l, 5, kE, kF), h2});
    const NodeId down =
        op(g, OpKind::kMatMul, {mat(l, 6, kF, kE), op(g, OpKind::kGlu, {gate, up})});
    x = op(g, OpKind::kAdd, {x, down});
  }
  s->out = x;
  return s;
}

using States = std::vector<std::vector<uint8_t>>;

States zero_states() {
  return States(2 * kLayers, std::vector<uint8_t>(static_cast<size_t>(kD * kHkv * kRows * 2), 0));
}

std::vector<float> run(Backend* backend, Step& s, States& st) {
  Bindings b = s.b;
  for (size_t i = 0; i < st.size(); ++i) b.bind_state(s.states[i], kF16, st[i]);
  std::vector<float> out(static_cast<size_t>(s.g.node(s.out).desc.nelements()));
  b.bind_output(s.out, out);
  const Status status = backend != nullptr ? backend->run(s.g, b) : graph::run_reference(s.g, b);
  EXPECT_TRUE(status.ok()) << status.to_string();
  return out;
}

TEST(NpuLayers, PrefillThenDecodeMatchReferenceAndDecodeSeesTheState) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  const Weights w = make_weights();
  States npu_st = zero_states(), ref_st = zero_states();

  auto prefill = build(w, 128, 0, 1);
  for (NodeId id = 0; id < prefill->g.size(); ++id) {
    ASSERT_EQ(npu->supports(prefill->g, id).level, Support::kNative) << id;
  }
  const auto np = run(npu.get(), *prefill, npu_st);
  const auto rp = run(nullptr, *prefill, ref_st);
  const double e_prefill = nmse(np, rp);
  EXPECT_LE(e_prefill, kBound);

  auto decode = build(w, 1, 128, 2);
  const auto nd = run(npu.get(), *decode, npu_st);
  const auto rd = run(nullptr, *decode, ref_st);
  const double e_decode = nmse(nd, rd);
  EXPECT_LE(e_decode, kBound);

  States empty = zero_states();
  const auto blind = run(npu.get(), *decode, empty);
  const double e_blind = nmse(blind, rd);
  EXPECT_GT(e_blind, 1e-2);
  std::printf("two layers: prefill NMSE %.3g, decode NMSE %.3g, decode over empty caches %.3g\n",
              e_prefill, e_decode, e_blind);
}

}  // namespace
}  // namespace geniex::backends::npu_test
