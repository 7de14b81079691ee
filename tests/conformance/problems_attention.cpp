// Attention and CacheWrite problems: F32 k / v inputs (GQA, dv != d, sliding window, softcap,
// non-causal, padded decode, a query that sees nothing); k / v states of the dtype (paged rows
// via k_rows with padding entries, two sequences via q_seg, several key chunks; Q8_0 keys with
// Q4_0 values); CacheWrite then attention, a prefill then a decode over NaN-filled states with
// spare bytes; Gemma 3 270M's prefill attention; CacheWrite alone into each state type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

#include "conformance/problems.h"

namespace geniex::conformance {
namespace {

OpParams attn(const graph::AttentionParams& a) {
  OpParams p;
  p.attn = a;
  return p;
}

// One attention problem over states: q [d, hq, tq], k / v [d, hkv, rows] of kv_type / v_type.
struct AttnSpec {
  GgmlType kv_type = kF32, v_type = kF32;
  int64_t d = 64, hq = 4, hkv = 2, tq = 1;
  int64_t tk = 0;  // key list length (0: tq + 11)
  bool paged = false, segments = false;
  graph::AttentionParams params;
  std::string name;
};

std::unique_ptr<Problem> attention_over_states(const AttnSpec& s, const Target& tg) {
  auto c = std::make_unique<Problem>();
  c->name = s.name;
  if (tg.is_static()) c->tokens(s.tq);
  std::mt19937 rng(7);
  const int64_t tk = s.tk != 0 ? s.tk : s.tq + 11;
  const int64_t rows = s.paged ? tk + 9 : tk;
  const NodeId q = c->input({s.d, s.hq, s.tq, 1});
  const NodeId k = c->state(graph::make_desc(s.kv_type, s.d, s.hkv, rows), "k_cache");
  const NodeId v = c->state(graph::make_desc(s.v_type, s.d, s.hkv, rows), "v_cache");
  std::vector<int32_t> q_pos(sz(s.tq)), k_pos(sz(tk)), k_rows, q_seg;
  for (int64_t i = 0; i < s.tq; ++i) q_pos[sz(i)] = static_cast<int32_t>(tk - s.tq + i);
  for (int64_t j = 0; j < tk; ++j) k_pos[sz(j)] = static_cast<int32_t>(j);
  if (s.paged) {
    k_rows.resize(sz(tk));
    std::vector<int32_t> perm(sz(rows));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t j = 0; j < tk; ++j) k_rows[sz(j)] = perm[sz(j)];
    for (int64_t j = 2; j < tk; j += 5) k_pos[sz(j)] = -1;  // padding entries
  }
  if (s.segments) {  // two sequences: list entries [0, split) and [split, tk), own positions
    const int32_t split = static_cast<int32_t>(tk / 2);
    const int64_t q1 = s.tq / 2;
    q_seg.resize(sz(2 * s.tq));
    for (int64_t i = 0; i < s.tq; ++i) {
      const bool first = i < q1;
      q_seg[sz(2 * i)] = first ? 0 : split;
      q_seg[sz(2 * i + 1)] = first ? split : static_cast<int32_t>(tk);
      q_pos[sz(i)] = static_cast<int32_t>(first ? split - q1 + i : (tk - split) - (s.tq - i));
    }
    for (int64_t j = split; j < tk; ++j) {
      if (k_pos[sz(j)] >= 0) k_pos[sz(j)] = static_cast<int32_t>(j - split);
    }
  }
  std::vector<NodeId> in = {q, k, v, c->ints(q_pos, "q_pos"), c->ints(k_pos, "k_pos")};
  if (s.paged) in.push_back(c->ints(k_rows, "k_rows"));
  if (s.segments) in.push_back(c->ints(q_seg, "q_seg", 2));
  c->out = c->op(OpKind::kAttention, in, attn(s.params));
  return c;
}

// F32 k / v inputs (no state): the CPU backend test's cases.
struct InputCase {
  std::string name;
  int64_t d, dv, nh, nkv, nq, nk;
  std::vector<int32_t> q_pos, k_pos;
  graph::AttentionParams params;
};

std::unique_ptr<Problem> attention_over_inputs(const InputCase& ic, const Target& tg) {
  auto p = std::make_unique<Problem>();
  p->name = ic.name;
  p->seed = 91;
  if (tg.is_static()) p->tokens(ic.nq);
  const NodeId q = p->input({ic.d, ic.nh, ic.nq, 1}, 1.0f, "q");
  const NodeId k = p->input({ic.d, ic.nkv, ic.nk, 1}, 1.0f, "k");
  const NodeId v = p->input({ic.dv, ic.nkv, ic.nk, 1}, 1.0f, "v");
  p->out =
      p->op(OpKind::kAttention, {q, k, v, p->ints(ic.q_pos, "q_pos"), p->ints(ic.k_pos, "k_pos")},
            attn(ic.params));
  return p;
}

// The NPU test's step: CacheWrite of T new tokens into scattered rows of a 512-row state that
// already holds 100 tokens, then GQA attention over all of them plus 16 padding entries.
struct PagedStep {
  int32_t window = 0;
  float softcap = 0;
  bool segments = false;
};

std::unique_ptr<Problem> cache_write_then_attention(GgmlType kv, int64_t tokens,
                                                    const PagedStep& ps, const Target& tg) {
  const int64_t d = 32, hq = 4, hkv = 2, rows = 512, cached = 100, pad = 16;
  auto c = std::make_unique<Problem>();
  c->name = "CacheWrite + paged attention T=" + std::to_string(tokens) +
            " window=" + std::to_string(ps.window) +
            " softcap=" + std::to_string(static_cast<int>(ps.softcap)) +
            (ps.segments ? " q_seg" : "");
  c->seed = 30;
  if (tg.is_static()) c->tokens(tokens);
  const NodeId ks = c->state(graph::make_desc(kv, d, hkv, rows), "k_cache");
  const NodeId vs = c->state(graph::make_desc(kv, d, hkv, rows), "v_cache");
  const NodeId q = c->input({d, hq, tokens, 1}, 1.0f, "q");
  const NodeId kn = c->input({d, hkv, tokens, 1}, 1.0f, "k");
  const NodeId vn = c->input({d, hkv, tokens, 1}, 1.0f, "v");
  auto row_of = [&](int64_t i) { return static_cast<int32_t>((37 * i + 11) % rows); };
  std::vector<int32_t> slots, k_pos, k_rows;
  for (int64_t t = 0; t < tokens; ++t) slots.push_back(row_of(cached + t));
  for (int64_t i = 0; i < cached + tokens; ++i) {
    k_pos.push_back(static_cast<int32_t>(i));
    k_rows.push_back(row_of(i));
  }
  for (int64_t i = 0; i < pad; ++i) {
    k_pos.push_back(-1);
    k_rows.push_back(0);
  }
  const int64_t n_kv = static_cast<int64_t>(k_pos.size());
  const NodeId slot_in = c->ints(slots, "slots");
  const NodeId kc = c->op(OpKind::kCacheWrite, {ks, kn, slot_in});
  const NodeId vc = c->op(OpKind::kCacheWrite, {vs, vn, slot_in});
  graph::AttentionParams ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(d));
  ap.sliding_window = ps.window;
  ap.softcap = ps.softcap;
  std::vector<NodeId> in = {q,
                            kc,
                            vc,
                            c->ints(iota_i32(tokens, static_cast<int32_t>(cached)), "q_pos"),
                            c->ints(k_pos, "k_pos"),
                            c->ints(k_rows, "k_rows")};
  if (ps.segments) {  // even queries see the whole list, odd ones only its first half
    std::vector<int32_t> seg;
    for (int64_t t = 0; t < tokens; ++t) {
      seg.push_back(0);
      seg.push_back(static_cast<int32_t>(t % 2 == 0 ? n_kv : n_kv / 2));
    }
    in.push_back(c->ints(seg, "q_seg", 2));
  }
  c->out = c->op(OpKind::kAttention, in, attn(ap));
  return c;
}

// The CPU test's cached step: write n_new tokens at `slots` of 8-row caches whose empty rows
// hold NaN (masked keys must never be read) and 64 spare bytes, then attend over the whole
// cache. Run 0 is a 5-token prefill, run 1 a decode of one token reading what run 0 wrote.
constexpr int64_t kD = 32, kNh = 4, kNkv = 2, kSlots = 8;

void build_cache_step(Problem& p, GgmlType type, int run) {
  const int64_t n_new = run == 0 ? 5 : 1;
  const std::vector<int32_t> slots = run == 0 ? iota_i32(5) : std::vector<int32_t>{5};
  std::vector<int32_t> k_pos = {-1, -1, -1, -1, -1, -1, -1, -1};
  for (int32_t i = 0; i <= (run == 0 ? 4 : 5); ++i) k_pos[sz(i)] = i;
  p.g = graph::Graph{};
  p.b = graph::Bindings{};
  p.seed = run == 0 ? 200 : 300;
  const NodeId q = p.input({kD, kNh, n_new, 1}, 1.0f, "q");
  const NodeId k = p.input({kD, kNkv, n_new, 1}, 1.0f, "k");
  const NodeId v = p.input({kD, kNkv, n_new, 1}, 1.0f, "v");
  const NodeId sl = p.ints(slots, "slots");
  const NodeId qp = p.ints(slots, "q_pos");  // slot i holds position i
  const NodeId kp = p.ints(k_pos, "k_pos");
  const NodeId ks = p.g.add_state(graph::make_desc(type, kD, kNkv, kSlots), "cache_k");
  const NodeId vs = p.g.add_state(graph::make_desc(type, kD, kNkv, kSlots), "cache_v");
  const NodeId kw = p.op(OpKind::kCacheWrite, {ks, k, sl});
  const NodeId vw = p.op(OpKind::kCacheWrite, {vs, v, sl});
  graph::AttentionParams ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(kD));
  p.out = p.op(OpKind::kAttention, {q, kw, vw, qp, kp}, attn(ap));
  if (run == 0) {
    const size_t row = quant::testing::row_bytes(type, sz(kD * kNkv));
    std::vector<uint8_t> nan_fill(row * sz(kSlots) + 64);
    const size_t elem = type == kF32 ? 4 : 2;  // f32 NaN, or f16 NaN (Q8_0 / Q4_0: the scales)
    for (size_t i = 0; i + elem <= nan_fill.size(); i += elem) {
      if (type == kF32) {
        const float qnan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(&nan_fill[i], &qnan, 4);
      } else {
        nan_fill[i] = 0x00;
        nan_fill[i + 1] = 0x7E;
      }
    }
    p.states = {{ks, type, nan_fill}, {vs, type, nan_fill}};
  }
}

}  // namespace

ProblemList attention_problems(GgmlType t, const Target& tg) {
  ProblemList out;
  const bool quantized = t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0;
  if (t == kF32 && !tg.is_static()) {
    graph::AttentionParams causal;
    causal.scale = 0.125f;
    graph::AttentionParams window = causal, capped = causal, open = causal;
    window.sliding_window = 3;
    capped.softcap = 5.0f;
    capped.scale = 1.0f;
    open.causal = false;
    const std::vector<InputCase> cases = {
        {"inputs: causal prefill", 64, 64, 4, 4, 9, 9, iota_i32(9), iota_i32(9), causal},
        {"inputs: gqa 6/2 dv 32", 64, 32, 6, 2, 9, 9, iota_i32(9), iota_i32(9), causal},
        {"inputs: sliding window 3", 32, 32, 4, 1, 11, 11, iota_i32(11), iota_i32(11), window},
        {"inputs: softcap", 32, 32, 4, 2, 7, 7, iota_i32(7), iota_i32(7), capped},
        {"inputs: non-causal", 16, 16, 2, 2, 5, 5, iota_i32(5), iota_i32(5), open},
        {"inputs: decode padded",
         32,
         32,
         8,
         2,
         1,
         10,
         {6},
         {0, 1, 2, 3, 4, 5, 6, -1, -1, -1},
         window},
        {"inputs: nothing visible", 16, 16, 2, 1, 2, 3, {0, 1}, {-1, 5, 7}, causal},
    };
    for (const auto& ic : cases) out.push_back(attention_over_inputs(ic, tg));
  }
  if (t == kF32 && tg.is_static()) {  // F32 k / v inputs, decode over 24 keys
    graph::AttentionParams a;
    a.scale = 0.25f;
    out.push_back(attention_over_inputs(
        {"inputs: decode over 24 keys", 16, 16, 2, 1, 1, 24, {20}, iota_i32(24), a}, tg));
  }
  // Over states of this type (the OpenCL test's cases).
  std::vector<GgmlType> v_types = {t};
  if (t == GgmlType::kQ8_0) v_types.push_back(GgmlType::kQ4_0);  // mixed K / V caches
  for (GgmlType vt : v_types) {
    const std::string ty = vt == t ? "" : std::string(" v ") + std::string(ggml_type_name(vt));
    for (int64_t tq : tg.tokens({1, 37})) {
      AttnSpec s;
      s.kv_type = t;
      s.v_type = vt;
      s.tq = tq;
      s.params.scale = 0.125f;
      s.name = "states: GQA T=" + std::to_string(tq) + ty;
      out.push_back(attention_over_states(s, tg));
      s.params.sliding_window = 9;
      s.params.softcap = 3.0f;
      s.name = "states: window+softcap T=" + std::to_string(tq) + ty;
      out.push_back(attention_over_states(s, tg));
    }
    AttnSpec p;
    p.kv_type = t;
    p.v_type = vt;
    p.tq = tg.tokens({37}).back();
    p.tk = tg.is_static() ? p.tq + 22 : 150;  // several key chunks per work-group
    p.d = quantized ? 64 : 80;                // block caches need head_dim % 32 == 0
    p.hq = quantized ? 4 : 6;
    p.hkv = 2;
    p.paged = true;
    p.params.scale = 0.1f;
    p.name = "states: paged k_rows" + ty;
    out.push_back(attention_over_states(p, tg));
    p.segments = true;
    p.name = "states: paged 2 sequences" + ty;
    out.push_back(attention_over_states(p, tg));
    if (quantized) {
      p.params.softcap = 4.0f;
      p.params.sliding_window = 40;
      p.name = "states: paged 2 sequences window softcap" + ty;
    } else {
      p.params.causal = false;
      p.name = "states: paged 2 sequences non-causal" + ty;
    }
    out.push_back(attention_over_states(p, tg));
  }
  // CacheWrite then paged attention (the NPU test's steps).
  for (int64_t tokens : tg.tokens({1, 37})) {
    out.push_back(cache_write_then_attention(t, tokens, {0, 0, false}, tg));
    out.push_back(cache_write_then_attention(t, tokens, {40, 0, false}, tg));
    out.push_back(cache_write_then_attention(t, tokens, {0, 30.0f, true}, tg));
  }
  if (!tg.is_static()) {
    // Prefill then decode over NaN-filled 8-row caches with spare bytes (the CPU test's).
    auto p = std::make_unique<Problem>();
    p->name = "prefill 5 then decode 1 over NaN-filled caches";
    build_cache_step(*p, t, 0);
    p->extra_runs = 1;
    p->before_run = [t](Problem& pr, int run) { build_cache_step(pr, t, run); };
    out.push_back(std::move(p));
  }
  if (t == kF16) {  // Gemma 3 270M's prefill attention: head_dim 256, 4 query heads on 1 kv head
    for (int64_t tq : tg.tokens({1, 37, kGemmaPrefillTokens})) {
      auto c = std::make_unique<Problem>();
      c->name = "gemma d=256 4:1 T=" + std::to_string(tq);
      c->heavy = tq > 1;
      if (tg.is_static()) c->tokens(tq);
      const int64_t d = 256, tk = 256;
      const NodeId q = c->input({d, 4, tq, 1}, 4.0f, "q");
      const NodeId k = c->state(graph::make_desc(kF16, d, 1, tk), "k_cache");
      const NodeId v = c->state(graph::make_desc(kF16, d, 1, tk), "v_cache");
      std::vector<int32_t> q_pos(sz(tq));
      for (int64_t i = 0; i < tq; ++i) q_pos[sz(i)] = static_cast<int32_t>(tk - tq + i);
      graph::AttentionParams ap;
      ap.scale = 1.0f / 16.0f;
      ap.sliding_window = 512;
      c->out = c->op(OpKind::kAttention,
                     {q, k, v, c->ints(q_pos, "q_pos"), c->ints(iota_i32(tk), "k_pos")}, attn(ap));
      out.push_back(std::move(c));
    }
  }
  return out;
}

ProblemList cache_write_problems(GgmlType t, const Target& tg) {
  ProblemList out;
  for (int64_t tokens : tg.tokens({4})) {
    auto c = std::make_unique<Problem>();
    const int64_t rows = tg.is_static() ? 160 : 11;
    c->name = "[32, 3, " + std::to_string(rows) + "] + 7 spare bytes, " + std::to_string(tokens) +
              " scattered slots";
    if (tg.is_static()) c->tokens(tokens);
    const NodeId st = c->state(graph::make_desc(t, 32, 3, rows), "cache", 7);
    const NodeId src = c->input({32, 3, tokens, 1});
    std::vector<int32_t> slots;
    if (tokens == 4) {
      slots = {7, 0, 10, 3};
    } else {
      for (int64_t i = 0; i < tokens; ++i)
        slots.push_back(static_cast<int32_t>((i * 7 + 3) % rows));
    }
    c->op(OpKind::kCacheWrite, {st, src, c->ints(slots, "slots")});
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace geniex::conformance
