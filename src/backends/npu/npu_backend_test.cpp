// The NPU adapter over the reference plugin: capability answers, refusals and their Status
// codes, the memory cap, the failure knobs, the compile cache and hooks — and that the backend
// stays usable after every failure.
#include "backends/npu/npu_backend.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "conformance/compare.h"
#include "conformance/problem.h"

namespace geniex::backends::npu_test {
namespace {

using namespace conformance;  // NOLINT(build/namespaces): Problem, run_problem, nmse

// The reference plugin as a Backend, opened with `config`.
std::unique_ptr<Backend> ref_npu(const std::string& config = {}, size_t max_cached_graphs = 16) {
  NpuOptions o;
  o.config = config;
  o.max_cached_graphs = max_cached_graphs;
  auto b = make_npu_backend(std::filesystem::path(GENIEX_NPU_REF_PLUGIN), o);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? std::move(*b) : nullptr;
}

using graph::make_desc;
using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

constexpr GgmlType kF32 = GgmlType::kF32;

// x [k, tokens] -> matmul with a Q8_0 [k, n] weight -> silu.
std::unique_ptr<Problem> small_graph(int32_t tokens, int64_t k = 64, int64_t n = 32,
                                     uint32_t seed = 1) {
  auto c = std::make_unique<Problem>();
  c->seed = seed;
  c->g.set_batch_tokens(tokens);
  const NodeId w = c->weight(GgmlType::kQ8_0, k, n);
  const NodeId x = c->input(make_desc(kF32, k, tokens).ne);
  c->out = add(c->g, OpKind::kSilu, {add(c->g, OpKind::kMatMul, {w, x}, {}, "mm")}, {}, "act");
  return c;
}

void expect_matches_reference(Backend& npu, const Problem& c) {
  const Outcome a = run_problem(c, &npu);
  const Outcome r = run_problem(c, nullptr);
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
  Problem c;
  c.g.set_batch_tokens(1);
  const NodeId table = c.weight(GgmlType::kQ8_0, 64, 10);
  const NodeId emb = add(c.g, OpKind::kEmbedding, {table, c.ints({3}, "ids")});
  OpParams cap;
  cap.scale = 30.0f;
  const NodeId softcap = add(c.g, OpKind::kSoftcap, {emb}, cap);
  const NodeId w = c.weight(GgmlType::kQ4_K, 256, 8);
  const NodeId mm = add(c.g, OpKind::kMatMul, {w, c.input(make_desc(kF32, 256).ne)});
  const NodeId q8state = c.g.add_state(make_desc(GgmlType::kQ8_0, 32, 1, 4), "kq8");
  const NodeId cw = add(c.g, OpKind::kCacheWrite,
                        {q8state, c.input(make_desc(kF32, 32, 1, 1).ne), c.ints({0}, "slot")});

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
    Problem c;
    c.g.set_batch_tokens(1);
    const NodeId table = c.weight(GgmlType::kF16, 64, 10);
    c.out = add(c.g, OpKind::kEmbedding, {table, c.ints({3}, "ids")}, {}, "embd");
    const Outcome o = run_problem(c, npu.get());
    EXPECT_EQ(o.status.code(), StatusCode::kUnimplemented);
    EXPECT_NE(o.status.message().find("'embd' (Embedding)"), std::string::npos)
        << o.status.message();
  }
  {
    auto c = small_graph(64);
    const Outcome o = run_problem(*c, npu.get());
    EXPECT_EQ(o.status.code(), StatusCode::kUnimplemented);
    EXPECT_NE(o.status.message().find("{1, 128}"), std::string::npos) << o.status.message();
  }
  expect_matches_reference(*npu, *small_graph(128));
}

TEST(NpuBackend, MemoryCapIsResourceExhausted) {
  auto npu = ref_npu("memory=256K");
  ASSERT_NE(npu, nullptr);
  auto big = small_graph(128, 1024, 512);  // 512 KiB of int8 weights alone
  const Outcome o = run_problem(*big, npu.get());
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
  const Outcome o = run_problem(*b, no_evict.get());  // a is still held: b does not fit
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
  decode->b.bind_weight(0, GgmlType::kQ8_0, prefill->bytes[0]);  // node 0: the weight
  expect_matches_reference(*npu, *prefill);
  expect_matches_reference(*npu, *decode);
  // Another host tensor of the same shape is not shared: it does not fit.
  auto other = small_graph(1, 1024, 512, 9);
  EXPECT_EQ(run_problem(*other, npu.get()).status.code(), StatusCode::kResourceExhausted);
  expect_matches_reference(*npu, *decode);  // and nothing was lost
}

TEST(NpuBackend, FailCompileKnob) {
  auto npu = ref_npu("fail_compile=1");
  ASSERT_NE(npu, nullptr);
  const Outcome o = run_problem(*small_graph(1), npu.get());
  EXPECT_EQ(o.status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(o.status.message().find("fail_compile"), std::string::npos) << o.status.message();

  // The environment is not a second route.
  ASSERT_EQ(setenv("GENIEX_NPU_REF_FAIL_COMPILE", "1", 1), 0);
  auto env = ref_npu();
  unsetenv("GENIEX_NPU_REF_FAIL_COMPILE");
  ASSERT_NE(env, nullptr);
  EXPECT_TRUE(run_problem(*small_graph(1), env.get()).status.ok());
}

TEST(NpuBackend, FailExecuteKnobIsResourceExhaustedOnce) {
  {
    auto npu = ref_npu("fail_execute_at=2");
    ASSERT_NE(npu, nullptr);
    auto c = small_graph(1);
    expect_matches_reference(*npu, *c);
    const Outcome o = run_problem(*c, npu.get());
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
  Problem c;
  c.g.set_batch_tokens(1);
  const NodeId x = c.input(make_desc(kF32, 8, 4).ne);
  const NodeId idx = c.ints({0}, "idx");  // the hook sets the row to read
  const NodeId rows = add(c.g, OpKind::kGetRows, {x, idx});
  c.out = add(c.g, OpKind::kScale, {rows});
  std::vector<NodeId> order;
  c.b.add_hook(c.out, [&] {
    order.push_back(c.out);
    return Status{};
  });
  c.b.add_hook(rows, [&] {
    order.push_back(rows);
    c.i32[0][0] = 3;
    return Status{};
  });
  const Outcome o = run_problem(c, npu.get());
  ASSERT_TRUE(o.status.ok()) << o.status.to_string();
  EXPECT_EQ(order, (std::vector<NodeId>{rows, c.out}));
  for (int e = 0; e < 8; ++e) EXPECT_EQ(o.out[e], c.f32[0][3 * 8 + e]);

  c.b.add_hook(rows, [] { return resource_exhausted("page-in failed"); });
  const Outcome f = run_problem(c, npu.get());
  EXPECT_EQ(f.status.code(), StatusCode::kResourceExhausted);
}

TEST(NpuBackend, RunTimeErrorsAreStatuses) {
  auto npu = ref_npu();
  ASSERT_NE(npu, nullptr);
  {  // a slot outside the state
    Problem c;
    c.g.set_batch_tokens(1);
    const NodeId st = c.state(make_desc(GgmlType::kF16, 8, 1, 4));
    c.out = add(c.g, OpKind::kScale,
                {add(c.g, OpKind::kGetRows, {c.input(make_desc(kF32, 8, 1).ne), c.ints({0})})});
    add(c.g, OpKind::kCacheWrite, {st, c.input(make_desc(kF32, 8, 1, 1).ne), c.ints({9}, "slot")});
    const Outcome o = run_problem(c, npu.get());
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
