// The OpenCL backend's own behaviour around its ops: errors that name the node, capability
// answers that say why, a failed CacheWrite that writes nothing, and devices without fp64. Every
// op x dtype against graph::run_reference is the conformance suite's job (tests/conformance).
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/opencl/opencl_shared_backend.h"

namespace geniex::backends::opencl_test {
namespace {

constexpr double kF32Bound = 1e-5;
constexpr double kBlockBound = 1e-12;

OpParams scale_params(float scale) {
  OpParams p;
  p.scale = scale;
  return p;
}

TEST(OpenclOps, EmbeddingIdOutOfRangeIsAnErrorNamingTheNode) {
  Problem c;
  const NodeId table = c.weight(GgmlType::kQ8_0, 64, 10);
  const NodeId ids = c.ints({1, 10});
  const NodeId y = c.op(OpKind::kEmbedding, {table, ids});
  std::vector<float> out(128);
  c.b.bind_output(y, out);
  const Status s = shared_backend().run(c.g, c.b);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("node " + std::to_string(y)), std::string::npos) << s.message();
}

TEST(OpenclOps, UnsupportedWeightTypeSaysWhy) {
  Problem c;
  const NodeId w = c.weight(GgmlType::kQ2_K, 256, 4);
  const NodeId y = c.op(OpKind::kMatMul, {w, c.input({256, 1, 1, 1})});
  const OpSupport s = shared_backend().supports(c.g, y);
  EXPECT_EQ(s.level, Support::kUnsupported);
  EXPECT_EQ(s.reason, "no matmul kernel for Q2_K");
  std::vector<float> out(4);
  c.b.bind_output(y, out);
  const Status st = shared_backend().run(c.g, c.b);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("Q2_K"), std::string::npos) << st.message();
}

TEST(OpenclOps, CacheWriteSlotOutOfRangeWritesNothing) {
  Problem c;
  const NodeId st = c.g.add_state(graph::make_desc(GgmlType::kF32, 8, 1, 4), "cache");
  std::vector<uint8_t> host(8 * 4 * 4, 0);
  c.b.bind_state(st, GgmlType::kF32, host);
  const NodeId cw = c.op(OpKind::kCacheWrite, {st, c.input({8, 1, 2, 1}), c.ints({1, 4}, "slots")});
  (void)cw;
  const Status s = shared_backend().run(c.g, c.b);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](uint8_t v) { return v == 0; }));
}

// Devices without cl_khr_fp64 (Adreno) build the kernels with `wide` = float: they must still
// compile and stay within the f32 bounds; the block MatMul does not depend on fp64.
TEST(OpenclOps, WithoutFp64TheF32FallbackStaysClose) {
  OpenclBackendOptions o;
  o.program_cache_dir = "none";
  o.use_fp64 = false;
  auto b = make_opencl_backend(o);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  {
    Problem c;
    const NodeId x = c.input({96, 5, 1, 1});
    const NodeId n = c.op(OpKind::kRmsNorm, {x, c.weight(GgmlType::kF32, 96)});
    const NodeId g = c.op(OpKind::kSilu, {n});
    EXPECT_LE(compare(c, g, "no fp64: rms_norm + silu", **b), kF32Bound);
  }
  {
    Problem c;
    const NodeId y = c.op(OpKind::kSoftmax, {c.input({77, 3, 1, 1})}, scale_params(0.7f));
    EXPECT_LE(compare(c, y, "no fp64: softmax", **b), kF32Bound);
  }
  {
    Problem c;
    OpParams p;
    p.rope.base = 10000.0f;
    const NodeId y =
        c.op(OpKind::kRope, {c.input({64, 3, 4, 1}), c.ints({0, 7, 300, 4000}, "pos")}, p);
    EXPECT_LE(compare(c, y, "no fp64: rope", **b), kF32Bound);
  }
  {
    Problem c;
    const NodeId y =
        c.op(OpKind::kMatMul, {c.weight(GgmlType::kQ4_K, 512, 20), c.input({512, 3, 1, 1})});
    EXPECT_LE(compare(c, y, "no fp64: matmul Q4_K", **b), kBlockBound);
  }
  {
    Problem c;
    const NodeId y = c.op(OpKind::kShortConv,
                          {c.input({32, 5, 1, 1}), c.weight(GgmlType::kF32, 3, 32),
                           c.input({32, 2, 2, 1}, 1.0f, "state"), c.ints({1, 0, 1, -1, 1}, "seq")});
    EXPECT_LE(compare(c, y, "no fp64: short conv", **b), kF32Bound);
  }
}

// A short-conv token whose slot is past the states is an error, as in the reference; a padding
// token (slot < 0) is not.
TEST(OpenclOps, ShortConvSlotOutOfRangeIsAnError) {
  Problem c;
  const NodeId y =
      c.op(OpKind::kShortConv, {c.input({16, 3, 1, 1}), c.weight(GgmlType::kF32, 3, 16),
                                c.input({16, 2, 2, 1}, 1.0f, "state"), c.ints({0, -1, 2}, "seq")});
  std::vector<float> out(48);
  c.b.bind_output(y, out);
  const Status s = shared_backend().run(c.g, c.b);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
}

TEST(OpenclOps, ShortConvWithTooManyTapsIsUnsupportedAndSaysWhy) {
  Problem c;
  const NodeId y =
      c.op(OpKind::kShortConv, {c.input({16, 3, 1, 1}), c.weight(GgmlType::kF32, 65, 16)});
  const OpSupport s = shared_backend().supports(c.g, y);
  EXPECT_EQ(s.level, Support::kUnsupported);
  EXPECT_NE(s.reason.find("more than 64 taps"), std::string::npos) << s.reason;
  Problem ok;
  const NodeId z =
      ok.op(OpKind::kShortConv, {ok.input({16, 3, 1, 1}), ok.weight(GgmlType::kF32, 64, 16)});
  EXPECT_EQ(shared_backend().supports(ok.g, z).level, Support::kNative);
  EXPECT_LE(compare(ok, z, "short conv, 64 taps", shared_backend()), 1e-12);
}

// RoPE's cos / sin table is built on the host, so freq_factors must be readable there.
TEST(OpenclOps, RopeWithComputedFreqFactorsIsUnsupportedAndSaysWhy) {
  Problem c;
  const NodeId ff = c.op(OpKind::kScale, {c.input({16, 1, 1, 1})}, scale_params(2.0f));
  OpParams p;
  p.rope.base = 10000.0f;
  const NodeId y = c.op(OpKind::kRope, {c.input({32, 2, 1, 1}), c.ints({3}, "pos"), ff}, p);
  const OpSupport s = shared_backend().supports(c.g, y);
  EXPECT_EQ(s.level, Support::kUnsupported);
  EXPECT_NE(s.reason.find("freq_factors"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace geniex::backends::opencl_test
