// The reference NPU plugin, through the adapter, against graph::run_reference, op by op, for the
// two token counts it compiles (T = 1 and T = 128).
//
// What is measured and the bounds asserted:
// * MatMul (int8 weights per output row, int8 activations per token, int32 sums): the normalized
//   mean squared error sum((npu - ref)^2) / sum(ref^2) over the output <= 1e-3 for F32, F16,
//   Q8_0, Q4_0, Q4_K and Q6_K weights (Gaussian weights and activations; measured ~1e-4).
// * Every other op (the plugin computes them on f32 storage with the same scalar reference ops):
//   max |npu - ref| <= 1e-6 * max |ref| (in practice identical), and CacheWrite leaves the state
//   bytes identical to the reference's.
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/npu/npu_test_util.h"

namespace geniex::backends::npu_test {
namespace {

using graph::make_desc;
using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

constexpr GgmlType kF32 = GgmlType::kF32;
constexpr GgmlType kF16 = GgmlType::kF16;
constexpr double kExact = 1e-6;
constexpr double kInt8Nmse = 1e-3;
constexpr int64_t kTokenCounts[] = {1, 128};

// Runs `c` on the NPU and the reference and checks the output (and states) within `tol` of
// max |ref| (or, when `nmse_bound` > 0, the NMSE bound instead). Returns the measured error.
double check(Backend& npu, const Case& c, double tol, double nmse_bound = 0) {
  const Outcome a = run_case(&npu, c);
  const Outcome r = run_case(nullptr, c);
  EXPECT_TRUE(a.status.ok()) << a.status.to_string();
  EXPECT_TRUE(r.status.ok()) << r.status.to_string();
  if (!a.status.ok() || !r.status.ok()) return 1e9;
  for (size_t i = 0; i < a.states.size(); ++i) {
    EXPECT_EQ(a.states[i], r.states[i]) << "state " << i << " differs";
  }
  if (nmse_bound > 0) {
    const double e = nmse(a.out, r.out);
    EXPECT_LE(e, nmse_bound);
    return e;
  }
  const double e = max_rel(a.out, r.out);
  EXPECT_LE(e, tol);
  return e;
}

TEST(NpuConformance, MatMulInt8WithinNmseBound) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  const int64_t k = 256, n = 96;
  for (GgmlType t :
       {kF32, kF16, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    for (int64_t tokens : kTokenCounts) {
      Case c;
      c.g.set_batch_tokens(static_cast<int32_t>(tokens));
      const NodeId w = c.weight(t, k, n, 11);
      const NodeId x = c.rand(make_desc(kF32, k, tokens), 12);
      c.out = op(c.g, OpKind::kMatMul, {w, x});
      const double e = check(*npu, c, 0, kInt8Nmse);
      std::printf("matmul %s T=%lld: NMSE %.3g\n", std::string(ggml_type_name(t)).c_str(),
                  static_cast<long long>(tokens), e);
      EXPECT_GT(e, 0.0) << "int8 path should differ from the reference a little";
    }
  }
}

TEST(NpuConformance, MatMulOfZerosIsZero) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  Case c;
  c.g.set_batch_tokens(1);
  const NodeId w = c.weight(GgmlType::kQ8_0, 64, 8, 3);
  const NodeId x = c.f32(make_desc(kF32, 64), std::vector<float>(64, 0.0f));
  c.out = op(c.g, OpKind::kMatMul, {w, x});
  const Outcome a = run_case(npu.get(), c);
  ASSERT_TRUE(a.status.ok()) << a.status.to_string();
  for (float v : a.out) EXPECT_EQ(v, 0.0f);
}

TEST(NpuConformance, NormsAndElementwiseOps) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  const int64_t e = 64;
  for (int64_t tokens : kTokenCounts) {
    SCOPED_TRACE("T=" + std::to_string(tokens));
    auto fresh = [&] {
      auto c = std::make_unique<Case>();
      c->g.set_batch_tokens(static_cast<int32_t>(tokens));
      return c;
    };
    for (GgmlType wt : {kF32, kF16}) {  // RmsNorm with a fused weight (F16: dequantized)
      auto c = fresh();
      const NodeId x = c->rand(make_desc(kF32, e, tokens), 1);
      const NodeId w = c->weight(wt, e, 1, 2);
      OpParams p;
      p.eps = 1e-5f;
      c->out = op(c->g, OpKind::kRmsNorm, {x, w}, p);
      check(*npu, *c, kExact);
    }
    {
      auto c = fresh();
      c->out = op(c->g, OpKind::kRmsNorm, {c->rand(make_desc(kF32, e, tokens), 3)});
      check(*npu, *c, kExact);
    }
    for (OpKind k : {OpKind::kGelu, OpKind::kSilu, OpKind::kScale, OpKind::kSoftmax}) {
      auto c = fresh();
      OpParams p;
      p.scale = 0.7f;
      c->out = op(c->g, k, {c->rand(make_desc(kF32, e, tokens), 4)}, p);
      check(*npu, *c, kExact);
    }
    for (OpKind k : {OpKind::kAdd, OpKind::kMul}) {  // b broadcast over tokens, and full
      auto c = fresh();
      const NodeId a = c->rand(make_desc(kF32, e, tokens), 5);
      const NodeId b = c->rand(make_desc(kF32, e, 1), 6);
      const NodeId full = c->rand(make_desc(kF32, e, tokens), 7);
      c->out = op(c->g, k, {op(c->g, k, {a, b}), full});
      check(*npu, *c, kExact);
    }
    for (auto act : {graph::GluActivation::kSilu, graph::GluActivation::kGeluTanh}) {
      auto c = fresh();
      OpParams p;
      p.glu = act;
      c->out =
          op(c->g, OpKind::kGlu,
             {c->rand(make_desc(kF32, e, tokens), 8), c->rand(make_desc(kF32, e, tokens), 9)}, p);
      check(*npu, *c, kExact);
    }
    {  // Reshape then GetRows of the last token
      auto c = fresh();
      OpParams p;
      p.ne = {e / 2, 2 * tokens, 1, 1};
      const NodeId r = op(c->g, OpKind::kReshape, {c->rand(make_desc(kF32, e, tokens), 10)}, p);
      c->out = op(c->g, OpKind::kGetRows, {r, c->i32({static_cast<int32_t>(2 * tokens - 1), 0})});
      check(*npu, *c, kExact);
    }
  }
}

TEST(NpuConformance, Rope) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  const int64_t d = 32, h = 3;
  for (int64_t tokens : kTokenCounts) {
    for (auto mode : {graph::RopeMode::kNormal, graph::RopeMode::kNeox}) {
      for (bool partial : {false, true}) {
        Case c;
        c.g.set_batch_tokens(static_cast<int32_t>(tokens));
        OpParams p;
        p.rope.mode = mode;
        p.rope.n_dims = partial ? 16 : 0;
        p.rope.base = 10000.0f;
        p.rope.freq_scale = partial ? 0.5f : 1.0f;
        const NodeId x = c.rand(make_desc(kF32, d, h, tokens), 20);
        const NodeId pos = c.i32(iota_i32(tokens, 37), "pos");
        std::vector<NodeId> in = {x, pos};
        if (partial) in.push_back(c.f32(make_desc(kF32, 8), {1, 1, 2, 2, 4, 4, 8, 8}, "ff"));
        c.out = op(c.g, OpKind::kRope, in, p);
        check(*npu, c, kExact);
      }
    }
  }
}

// CacheWrite of T new tokens into a paged K/V state (F32 or F16) that already holds `cached`
// tokens, then GQA attention over a key list with padding entries, with or without a sliding
// window, a softcap and per-query segments.
struct AttnCase {
  GgmlType kv = kF32;
  int32_t window = 0;
  float softcap = 0;
  bool segments = false;
};

void attention_case(Backend& npu, int64_t tokens, const AttnCase& ac) {
  SCOPED_TRACE("T=" + std::to_string(tokens) + " kv=" + std::string(ggml_type_name(ac.kv)) +
               " window=" + std::to_string(ac.window) + " softcap=" + std::to_string(ac.softcap) +
               " segments=" + std::to_string(ac.segments));
  const int64_t d = 32, hq = 4, hkv = 2, rows = 512, cached = 100, pad = 16;
  Case c;
  c.g.set_batch_tokens(static_cast<int32_t>(tokens));
  const NodeId ks = c.state(make_desc(ac.kv, d, hkv, rows), 30, "k_cache");
  const NodeId vs = c.state(make_desc(ac.kv, d, hkv, rows), 31, "v_cache");
  const NodeId q = c.rand(make_desc(kF32, d, hq, tokens), 32, "q");
  const NodeId kn = c.rand(make_desc(kF32, d, hkv, tokens), 33, "k");
  const NodeId vn = c.rand(make_desc(kF32, d, hkv, tokens), 34, "v");
  // Token i (cached or new) lives in row (37 i + 11) mod 512: rows are scattered, as pages are.
  auto row_of = [&](int64_t i) { return static_cast<int32_t>((37 * i + 11) % rows); };
  std::vector<int32_t> slots, k_pos, k_rows;
  for (int64_t t = 0; t < tokens; ++t) slots.push_back(row_of(cached + t));
  for (int64_t i = 0; i < cached + tokens; ++i) {
    k_pos.push_back(static_cast<int32_t>(i));
    k_rows.push_back(row_of(i));
  }
  for (int64_t i = 0; i < pad; ++i) {  // padding entries: empty slots at a valid row
    k_pos.push_back(-1);
    k_rows.push_back(0);
  }
  const int64_t n_kv = static_cast<int64_t>(k_pos.size());
  const NodeId slot_in = c.i32(slots, "slots");
  const NodeId kc = op(c.g, OpKind::kCacheWrite, {ks, kn, slot_in});
  const NodeId vc = op(c.g, OpKind::kCacheWrite, {vs, vn, slot_in});
  OpParams p;
  p.attn.scale = 1.0f / std::sqrt(static_cast<float>(d));
  p.attn.sliding_window = ac.window;
  p.attn.softcap = ac.softcap;
  std::vector<NodeId> in = {q,
                            kc,
                            vc,
                            c.i32(iota_i32(tokens, static_cast<int32_t>(cached)), "qp"),
                            c.i32(k_pos, "kp"),
                            c.i32(k_rows, "rows")};
  if (ac.segments) {  // even queries see the whole list, odd ones only its first half
    std::vector<int32_t> seg;
    for (int64_t t = 0; t < tokens; ++t) {
      seg.push_back(0);
      seg.push_back(static_cast<int32_t>(t % 2 == 0 ? n_kv : n_kv / 2));
    }
    c.g.add_input(make_desc(GgmlType::kI32, 2, tokens), "seg");
    c.i32_data.push_back(seg);
    in.push_back(static_cast<NodeId>(c.g.size() - 1));
    c.base.bind_input(in.back(), std::span<const int32_t>(c.i32_data.back()));
  }
  c.out = op(c.g, OpKind::kAttention, in, p);
  check(npu, c, kExact);
}

TEST(NpuConformance, CacheWriteAndPagedAttention) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  for (int64_t tokens : kTokenCounts) {
    for (GgmlType kv : {kF32, kF16}) {
      attention_case(*npu, tokens, {kv, 0, 0, false});
      attention_case(*npu, tokens, {kv, 40, 0, false});
      attention_case(*npu, tokens, {kv, 0, 30.0f, true});
    }
  }
}

TEST(NpuConformance, AttentionWithoutRowListOverF32Values) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  const int64_t d = 16, h = 2, n_kv = 24;
  Case c;
  c.g.set_batch_tokens(1);
  const NodeId q = c.rand(make_desc(kF32, d, h, 1), 40);
  const NodeId k = c.rand(make_desc(kF32, d, 1, n_kv), 41);
  const NodeId v = c.rand(make_desc(kF32, d, 1, n_kv), 42);
  OpParams p;
  p.attn.scale = 0.25f;
  c.out = op(c.g, OpKind::kAttention, {q, k, v, c.i32({20}, "qp"), c.i32(iota_i32(n_kv), "kp")}, p);
  check(*npu, c, kExact);
}

}  // namespace
}  // namespace geniex::backends::npu_test
