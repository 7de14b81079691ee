// The NPU adapter over the reference plugin: capability answers, refusals and their Status
// codes, the memory cap, the failure knobs, the compile cache and hooks — and that the backend
// stays usable after every failure.
#include "backends/npu/npu_backend.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/npu/npu_test_util.h"

namespace geniex::backends::npu_test {
namespace {

using graph::make_desc;
using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

constexpr GgmlType kF32 = GgmlType::kF32;

// x [k, tokens] -> matmul with a Q8_0 [k, n] weight -> silu.
std::unique_ptr<Case> small_graph(int32_t tokens, int64_t k = 64, int64_t n = 32,
                                  uint32_t seed = 1) {
  auto c = std::make_unique<Case>();
  c->g.set_batch_tokens(tokens);
  const NodeId w = c->weight(GgmlType::kQ8_0, k, n, seed);
  const NodeId x = c->rand(make_desc(kF32, k, tokens), seed + 1);
  c->out = op(c->g, OpKind::kSilu, {op(c->g, OpKind::kMatMul, {w, x}, {}, "mm")}, {}, "act");
  return c;
}

void expect_matches_reference(Backend& npu, const Case& c) {
  const Outcome a = run_case(&npu, c);
  const Outcome r = run_case(nullptr, c);
  ASSERT_TRUE(a.status.ok()) << a.status.to_string();
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_LE(nmse(a.out, r.out), 1e-3);
}

TEST(NpuBackend, NameAndKind) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  EXPECT_EQ(npu->kind(), DeviceKind::kNpu);
  EXPECT_EQ(npu->name(), "npu(ref: reference NPU (host, int8))");
}

TEST(NpuBackend, SupportsAnswersFromTheCaps) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  Case c;
  c.g.set_batch_tokens(1);
  const NodeId table = c.weight(GgmlType::kQ8_0, 64, 10, 1);
  const NodeId emb = op(c.g, OpKind::kEmbedding, {table, c.i32({3}, "ids")});
  OpParams cap;
  cap.scale = 30.0f;
  const NodeId softcap = op(c.g, OpKind::kSoftcap, {emb}, cap);
  const NodeId w = c.weight(GgmlType::kQ4_K, 256, 8, 2);
  const NodeId mm = op(c.g, OpKind::kMatMul, {w, c.rand(make_desc(kF32, 256), 3)});
  const NodeId q8state = c.g.add_state(make_desc(GgmlType::kQ8_0, 32, 1, 4), "kq8");
  const NodeId cw = op(c.g, OpKind::kCacheWrite,
                       {q8state, c.rand(make_desc(kF32, 32, 1, 1), 4), c.i32({0}, "slot")});

  EXPECT_EQ(npu->supports(c.g, table).level, Support::kNative);  // leaves need nothing
  EXPECT_EQ(npu->supports(c.g, mm).level, Support::kNative);
  const OpSupport e = npu->supports(c.g, emb);
  EXPECT_EQ(e.level, Support::kUnsupported);
  EXPECT_NE(e.reason.find("Embedding is not supported"), std::string::npos) << e.reason;
  EXPECT_EQ(npu->supports(c.g, softcap).level, Support::kUnsupported);
  const OpSupport q = npu->supports(c.g, cw);
  EXPECT_EQ(q.level, Support::kUnsupported);
  EXPECT_NE(q.reason.find("Q8_0"), std::string::npos) << q.reason;

  c.g.set_batch_tokens(64);  // a token count the NPU never compiles
  const OpSupport t = npu->supports(c.g, mm);
  EXPECT_EQ(t.level, Support::kUnsupported);
  EXPECT_NE(t.reason.find("batch of 64 tokens is not one of the allowed counts {1, 128}"),
            std::string::npos)
      << t.reason;
}

TEST(NpuBackend, UnsupportedGraphsAreUnimplementedAndTheBackendStaysUsable) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  {
    Case c;
    c.g.set_batch_tokens(1);
    const NodeId table = c.weight(GgmlType::kF16, 64, 10, 1);
    c.out = op(c.g, OpKind::kEmbedding, {table, c.i32({3}, "ids")}, {}, "embd");
    const Outcome o = run_case(npu.get(), c);
    EXPECT_EQ(o.status.code(), StatusCode::kUnimplemented);
    EXPECT_NE(o.status.message().find("'embd' (Embedding)"), std::string::npos)
        << o.status.message();
  }
  {
    auto c = small_graph(64);
    const Outcome o = run_case(npu.get(), *c);
    EXPECT_EQ(o.status.code(), StatusCode::kUnimplemented);
    EXPECT_NE(o.status.message().find("{1, 128}"), std::string::npos) << o.status.message();
  }
  expect_matches_reference(*npu, *small_graph(128));
}

TEST(NpuBackend, MemoryCapIsResourceExhausted) {
  auto npu = ref_npu("memory=256K");
  ASSERT_NE(npu, nullptr);
  auto big = small_graph(128, 1024, 512);  // 512 KiB of int8 weights alone
  const Outcome o = run_case(npu.get(), *big);
  EXPECT_EQ(o.status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(o.status.message().find("npu plugin 'ref' compile"), std::string::npos)
      << o.status.message();
  EXPECT_NE(o.status.message().find("of 262144 left"), std::string::npos) << o.status.message();
  expect_matches_reference(*npu, *small_graph(1));  // a graph that fits still runs
}

TEST(NpuBackend, CompiledGraphsAreCachedAndEvicted) {
  // A cap that holds one compiled small graph (43648 bytes at T=128) but not two: running the
  // same graph again must reuse its compiled handle; with a cache of one graph, another graph
  // releases the first before compiling.
  auto npu = ref_npu("memory=64K", 1);
  ASSERT_NE(npu, nullptr);
  auto a = small_graph(128);
  for (int i = 0; i < 3; ++i) expect_matches_reference(*npu, *a);
  auto b = small_graph(128, 64, 32, 7);
  expect_matches_reference(*npu, *b);
  expect_matches_reference(*npu, *a);

  auto no_evict = ref_npu("memory=64K", 4);
  ASSERT_NE(no_evict, nullptr);
  expect_matches_reference(*no_evict, *a);
  const Outcome o = run_case(no_evict.get(), *b);  // a is still held: b does not fit
  EXPECT_EQ(o.status.code(), StatusCode::kResourceExhausted) << o.status.to_string();
}

TEST(NpuBackend, GraphsOfSeveralShapesShareTheirInt8Weights) {
  // A decode (1 token) and a prefill (128 tokens) graph over the same host weight: ~514 KiB of
  // int8 weights plus ~640 KiB of prefill activations fit under 1300 KiB only when the weight
  // is prepared once for both, as an NPU context shares weights between graphs.
  auto npu = ref_npu("memory=1300K", 4);
  ASSERT_NE(npu, nullptr);
  auto prefill = small_graph(128, 1024, 512);
  auto decode = small_graph(1, 1024, 512);
  decode->base.bind_weight(0, GgmlType::kQ8_0, prefill->weight_data[0]);  // node 0: the weight
  expect_matches_reference(*npu, *prefill);
  expect_matches_reference(*npu, *decode);
  // Another host tensor of the same shape is not shared: it does not fit.
  auto other = small_graph(1, 1024, 512, 9);
  EXPECT_EQ(run_case(npu.get(), *other).status.code(), StatusCode::kResourceExhausted);
  expect_matches_reference(*npu, *decode);  // and nothing was lost
}

TEST(NpuBackend, FailCompileKnob) {
  auto npu = ref_npu("fail_compile=1");
  ASSERT_NE(npu, nullptr);
  const Outcome o = run_case(npu.get(), *small_graph(1));
  EXPECT_EQ(o.status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(o.status.message().find("fail_compile"), std::string::npos) << o.status.message();

  ASSERT_EQ(setenv("GENIEX_NPU_REF_FAIL_COMPILE", "1", 1), 0);
  auto env = ref_npu();
  unsetenv("GENIEX_NPU_REF_FAIL_COMPILE");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(run_case(env.get(), *small_graph(1)).status.code(), StatusCode::kUnimplemented);
}

TEST(NpuBackend, FailExecuteKnobIsResourceExhaustedOnce) {
  for (bool from_env : {false, true}) {
    if (from_env) {
      ASSERT_EQ(setenv("GENIEX_NPU_REF_FAIL_EXECUTE_AT", "2", 1), 0);
    }
    auto npu = ref_npu(from_env ? "" : "fail_execute_at=2");
    unsetenv("GENIEX_NPU_REF_FAIL_EXECUTE_AT");
    ASSERT_NE(npu, nullptr);
    auto c = small_graph(1);
    expect_matches_reference(*npu, *c);
    const Outcome o = run_case(npu.get(), *c);
    EXPECT_EQ(o.status.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(o.status.message().find("npu plugin 'ref' execute: execute #2 fails"),
              std::string::npos)
        << o.status.message();
    expect_matches_reference(*npu, *c);  // usable afterwards
  }
}

TEST(NpuBackend, HooksRunInNodeOrderBeforeExecutionAndMayFillInputs) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  Case c;
  c.g.set_batch_tokens(1);
  const NodeId x = c.rand(make_desc(kF32, 8, 4), 1);
  const NodeId idx = c.i32({0}, "idx");  // the hook sets the row to read
  const NodeId rows = op(c.g, OpKind::kGetRows, {x, idx});
  c.out = op(c.g, OpKind::kScale, {rows});
  std::vector<NodeId> order;
  c.base.add_hook(c.out, [&] {
    order.push_back(c.out);
    return Status{};
  });
  c.base.add_hook(rows, [&] {
    order.push_back(rows);
    c.i32_data[0][0] = 3;
    return Status{};
  });
  const Outcome o = run_case(npu.get(), c);
  ASSERT_TRUE(o.status.ok()) << o.status.to_string();
  EXPECT_EQ(order, (std::vector<NodeId>{rows, c.out}));
  for (int e = 0; e < 8; ++e) EXPECT_EQ(o.out[e], c.f32_data[0][3 * 8 + e]);

  c.base.add_hook(rows, [] { return resource_exhausted("page-in failed"); });
  const Outcome f = run_case(npu.get(), c);
  EXPECT_EQ(f.status.code(), StatusCode::kResourceExhausted);
}

TEST(NpuBackend, RunTimeErrorsAreStatuses) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  {  // a slot outside the state
    Case c;
    c.g.set_batch_tokens(1);
    const NodeId st = c.state(make_desc(GgmlType::kF16, 8, 1, 4), 1);
    c.out = op(c.g, OpKind::kScale,
               {op(c.g, OpKind::kGetRows, {c.rand(make_desc(kF32, 8, 1), 2), c.i32({0})})});
    op(c.g, OpKind::kCacheWrite, {st, c.rand(make_desc(kF32, 8, 1, 1), 3), c.i32({9}, "slot")});
    const Outcome o = run_case(npu.get(), c);
    EXPECT_EQ(o.status.code(), StatusCode::kOutOfRange) << o.status.to_string();
    EXPECT_EQ(o.states[0], c.states[0].bytes);  // nothing written
  }
  {  // an input left unbound
    auto c = small_graph(1);
    graph::Bindings b;
    std::vector<float> out(32);
    b.bind_output(c->out, out);
    const Status s = npu->run(c->g, b);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
  expect_matches_reference(*npu, *small_graph(1));
}

}  // namespace
}  // namespace geniex::backends::npu_test
