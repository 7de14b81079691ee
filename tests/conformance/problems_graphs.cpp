// Small whole graphs, where ops hand each other results in a backend's own buffers:
// * DecoderBlock (the CPU backend test's): embedding -> norm -> q/k/v matmuls of mixed weight
//   types -> rope -> cache write -> attention -> output matmul -> residual -> GLU FFN with a
//   reshaped down projection, and the last token's row;
// * TwoLayers (the NPU test's): two transformer layers over paged F16 caches, a 128-token
//   prefill then a one-token decode that must read what the prefill wrote.
#include <cmath>
#include <string>

#include "conformance/problems.h"

namespace geniex::conformance {

namespace {

void build_block(Problem& pr, GgmlType cache_t, bool last_row, const Target& tg) {
  Problem* p = &pr;
  const int64_t emb = 64, vocab = 50, d = 16, nh = 4, nkv = 2, ff = 128, t = 6, slots = 8;
  p->name = last_row ? "decoder block, last token's row" : "decoder block, down projection";
  p->state_variant = "state";
  if (tg.is_static()) p->tokens(t);
  graph::Graph& g = p->g;
  auto w = [&](GgmlType ty, int64_t k, int64_t n, const char* nm) {
    return p->weight(ty, k, n, 0.5f, nm);
  };
  const NodeId tn = w(GgmlType::kQ8_0, emb, vocab, "tok");
  const NodeId ids = p->ints({1, 49, 7, 7, 0, 23}, "ids");
  const NodeId pos = p->ints(iota_i32(t), "pos");
  const NodeId kpos = p->ints({0, 1, 2, 3, 4, 5, -1, -1}, "kpos");
  const NodeId last = p->ints({5}, "last");
  const NodeId wqn = w(GgmlType::kQ8_0, emb, d * nh, "wq");
  const NodeId wkn = w(GgmlType::kQ5_0, emb, d * nkv, "wk");
  const NodeId wvn = w(kF16, emb, d * nkv, "wv");
  const NodeId won = w(GgmlType::kQ8_0, d * nh, emb, "wo");
  const NodeId wg = w(GgmlType::kQ4_0, emb, ff, "wg");
  const NodeId wu = w(GgmlType::kQ4_1, emb, ff, "wu");
  const NodeId wd = w(GgmlType::kQ4_K, ff * 2, emb / 2, "wd");
  const size_t state_bytes = sz(d * nkv * slots) * (cache_t == kF16 ? 2 : 4);
  const NodeId ks = g.add_state(graph::make_desc(cache_t, d, nkv, slots), "ck");
  const NodeId vs = g.add_state(graph::make_desc(cache_t, d, nkv, slots), "cv");
  p->states = {{ks, cache_t, std::vector<uint8_t>(state_bytes)},
               {vs, cache_t, std::vector<uint8_t>(state_bytes)}};
  const NodeId x = p->op(OpKind::kEmbedding, {tn, ids});
  const NodeId h = p->op(OpKind::kRmsNorm, {x});
  const NodeId q = p->op(OpKind::kMatMul, {wqn, h});
  const NodeId k = p->op(OpKind::kMatMul, {wkn, h});
  const NodeId v = p->op(OpKind::kMatMul, {wvn, h});
  OpParams rq, rk, rope, ap, flat, two;
  rq.ne = {d, nh, t, 1};
  rk.ne = {d, nkv, t, 1};
  rope.rope.mode = graph::RopeMode::kNeox;
  const NodeId q3 = p->op(OpKind::kRope, {p->op(OpKind::kReshape, {q}, rq), pos}, rope);
  const NodeId k3 = p->op(OpKind::kRope, {p->op(OpKind::kReshape, {k}, rk), pos}, rope);
  const NodeId kw = p->op(OpKind::kCacheWrite, {ks, k3, pos});
  const NodeId vw = p->op(OpKind::kCacheWrite, {vs, p->op(OpKind::kReshape, {v}, rk), pos});
  ap.attn.scale = 0.25f;
  const NodeId a = p->op(OpKind::kAttention, {q3, kw, vw, pos, kpos}, ap);
  flat.ne = {d * nh, t, 1, 1};
  const NodeId o = p->op(OpKind::kMatMul, {won, p->op(OpKind::kReshape, {a}, flat)});
  const NodeId r = p->op(OpKind::kAdd, {o, x});
  const NodeId gate = p->op(OpKind::kMatMul, {wg, r});
  const NodeId up = p->op(OpKind::kMatMul, {wu, r});
  const NodeId act = p->op(OpKind::kGlu, {gate, up});
  two.ne = {ff * 2, t / 2, 1, 1};
  const NodeId down = p->op(OpKind::kMatMul, {wd, p->op(OpKind::kReshape, {act}, two)});
  p->out = last_row ? p->op(OpKind::kGetRows, {r, last}) : down;
}

}  // namespace

ProblemList decoder_block_problems(GgmlType cache_t, const Target& tg) {
  ProblemList out;
  for (bool last_row : {false, true}) {
    auto p = std::make_unique<Problem>();
    build_block(*p, cache_t, last_row, tg);
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

constexpr int64_t kE = 64, kD = 16, kHq = 4, kHkv = 2, kF = 128, kRows = 256, kLayers = 2;
constexpr int64_t kKeys = 160;  // key list length: cached + new tokens, padded

// One step of `tokens` tokens at positions [start, start + tokens) over the layers' caches.
void build_layers(Problem& p, GgmlType cache_t, int64_t tokens, int32_t start, bool is_static) {
  p.g = graph::Graph{};
  p.b = graph::Bindings{};
  p.seed = 100;  // the same weights in every step
  graph::Graph& g = p.g;
  if (is_static) p.tokens(tokens);
  std::vector<int32_t> kpos, krows;
  for (int32_t i = 0; i < start + tokens; ++i) {
    kpos.push_back(i);
    krows.push_back(i);
  }
  while (static_cast<int64_t>(kpos.size()) < kKeys) {
    kpos.push_back(-1);
    krows.push_back(0);
  }
  auto mat = [&](int64_t k, int64_t n) {
    return p.weight(GgmlType::kQ4_0, k, n, 1.0f / std::sqrt(static_cast<float>(k)));
  };
  auto norm = [&](NodeId in) {
    auto nv = gaussian(sz(kE), 0.1f, p.seed++);
    for (float& v : nv) v += 1.0f;
    const NodeId id = g.add_weight(graph::make_desc(kF32, kE), "norm");
    p.f32.push_back(std::move(nv));
    p.b.bind_weight(id, kF32, bytes_of(p.f32.back()));
    return p.op(OpKind::kRmsNorm, {in, id});
  };
  auto reshape = [&](NodeId in, int64_t a, int64_t b2, int64_t c) {
    OpParams r;
    r.ne = {a, b2, c, 1};
    return p.op(OpKind::kReshape, {in}, r);
  };
  std::vector<NodeId> weights_first;
  OpParams rope, attn;
  rope.rope.mode = graph::RopeMode::kNeox;
  attn.attn.scale = 0.25f;
  std::vector<NodeId> state_ids;
  for (int64_t l = 0; l < kLayers; ++l) {
    state_ids.push_back(g.add_state(graph::make_desc(cache_t, kD, kHkv, kRows), "k_cache"));
    state_ids.push_back(g.add_state(graph::make_desc(cache_t, kD, kHkv, kRows), "v_cache"));
  }
  const uint32_t data_seed = static_cast<uint32_t>(start + 1);
  NodeId x = p.values({kE, tokens, 1, 1}, gaussian(sz(kE * tokens), 1.0f, data_seed));
  const NodeId pos = p.ints(iota_i32(tokens, start), "pos");
  const NodeId kp = p.ints(kpos, "kpos");
  const NodeId kr = p.ints(krows, "krows");
  for (int64_t l = 0; l < kLayers; ++l) {
    const NodeId ks = state_ids[sz(2 * l)], vs = state_ids[sz(2 * l + 1)];
    const NodeId h = norm(x);
    const NodeId wq = mat(kE, kHq * kD), wk = mat(kE, kHkv * kD), wv = mat(kE, kHkv * kD);
    const NodeId q =
        p.op(OpKind::kRope, {reshape(p.op(OpKind::kMatMul, {wq, h}), kD, kHq, tokens), pos}, rope);
    const NodeId k =
        p.op(OpKind::kRope, {reshape(p.op(OpKind::kMatMul, {wk, h}), kD, kHkv, tokens), pos}, rope);
    const NodeId v = reshape(p.op(OpKind::kMatMul, {wv, h}), kD, kHkv, tokens);
    const NodeId kc = p.op(OpKind::kCacheWrite, {ks, k, pos});  // slot = position
    const NodeId vc = p.op(OpKind::kCacheWrite, {vs, v, pos});
    const NodeId a = p.op(OpKind::kAttention, {q, kc, vc, pos, kp, kr}, attn);
    const NodeId o = p.op(OpKind::kMatMul, {mat(kHq * kD, kE), reshape(a, kHq * kD, tokens, 1)});
    x = p.op(OpKind::kAdd, {x, o});
    const NodeId h2 = norm(x);
    const NodeId wg = mat(kE, kF), wu = mat(kE, kF), wd = mat(kF, kE);
    const NodeId gate = p.op(OpKind::kMatMul, {wg, h2});
    const NodeId up = p.op(OpKind::kMatMul, {wu, h2});
    x = p.op(OpKind::kAdd, {x, p.op(OpKind::kMatMul, {wd, p.op(OpKind::kGlu, {gate, up})})});
  }
  p.out = x;
  if (p.states.empty()) {
    const size_t bytes = quant::testing::row_bytes(cache_t, sz(kD * kHkv)) * sz(kRows);
    for (NodeId id : state_ids) p.states.push_back({id, cache_t, std::vector<uint8_t>(bytes)});
  }
}

}  // namespace

ProblemList two_layers_problems(GgmlType cache_t, const Target& tg) {
  ProblemList out;
  auto p = std::make_unique<Problem>();
  p->name = "two layers: 128-token prefill, then a 1-token decode";
  p->state_variant = "state";
  const bool is_static = tg.is_static();
  build_layers(*p, cache_t, 128, 0, is_static);
  p->extra_runs = 1;
  p->before_run = [cache_t, is_static](Problem& pr, int) {
    build_layers(pr, cache_t, 1, 128, is_static);
  };
  // The decode must see the prefill's state: over empty caches it is far off (NMSE > 1e-2).
  p->min_error_over_fresh_states = 1e-2;
  out.push_back(std::move(p));
  return out;
}

}  // namespace geniex::conformance
