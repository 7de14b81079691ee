// The QNN HTP plugin through the NPU adapter: config errors and a missing runtime (no runtime
// needed), then, where the runtime is (scripts/setup.sh installs PyPI onnxruntime-qnn): the
// device it names, honest capability answers, a MatMul + Add + RmsNorm graph on the emulated HTP
// against graph::run_reference within fp16 bounds, and refusals that leave the backend usable.
// Skipped only when the runtime is absent AND setup did not install it (qnn_test_env.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/npu/npu_backend.h"
#include "backends/npu/qnn/qnn_test_env.h"
#include "conformance/compare.h"
#include "conformance/problem.h"

namespace geniex::backends::qnn_test {
namespace {

using namespace conformance;  // NOLINT(build/namespaces): Problem, run_problem, nmse
using graph::make_desc;
using graph::NodeId;
using graph::OpKind;
using graph::OpParams;
using npu_qnn::testing::qnn_test_env;

constexpr GgmlType kF32 = GgmlType::kF32;
const std::filesystem::path kPlugin(GENIEX_NPU_QNN_PLUGIN);

Result<std::unique_ptr<Backend>> qnn_npu(const std::string& config = {}) {
  NpuOptions o;
  o.config = config;
  return make_npu_backend(kPlugin, o);
}

TEST(QnnPlugin, UnknownConfigKeyIsRefusedByName) {
  auto b = qnn_npu("htp_arch=v73;fail_compile=1");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("unknown key 'fail_compile'"), std::string::npos)
      << b.status().to_string();
  auto arch = qnn_npu("htp_arch=v12");
  ASSERT_FALSE(arch.ok());
  EXPECT_NE(arch.status().message().find("htp_arch 12"), std::string::npos);
}

TEST(QnnPlugin, MissingRuntimeSaysWhereItLooked) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "geniex_no_qnn_here";
  std::filesystem::create_directories(dir);
  auto b = qnn_npu("qnn_lib_dir=" + dir.string());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("QNN runtime not found at " + dir.string()),
            std::string::npos)
      << b.status().to_string();
  // make_npu_backends skips it with that note and goes on.
  NpuOptions o;
  o.plugin_dir = kPlugin.parent_path().string();
  o.config = "qnn_lib_dir=" + dir.string();
  std::vector<std::string> notes;
  o.notes = &notes;
  auto all = make_npu_backends(o);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_TRUE(all->empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("QNN runtime not found at"), std::string::npos) << notes[0];
}

TEST(QnnPlugin, AnUnknownCoreApiMajorVersionIsRefusedNamingBoth) {
  auto b = qnn_npu(std::string("qnn_lib_dir=") + GENIEX_FAKE_QNN_V3_DIR);
  ASSERT_FALSE(b.ok());
  const std::string m = b.status().message();
  EXPECT_NE(m.find("core API 2.x"), std::string::npos) << m;
  EXPECT_NE(m.find("FAKE_HTP core API 3.1.0"), std::string::npos) << m;
}

class QnnRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto env = qnn_test_env();
    if (const std::string why = env.skip_reason(); !why.empty()) GTEST_SKIP() << why;
    auto b = qnn_npu();
    ASSERT_TRUE(b.ok()) << b.status().to_string() << " [" << env.context() << "]";
    npu_ = std::move(*b);
  }
  std::unique_ptr<Backend> npu_;
};

TEST_F(QnnRuntime, NamesTargetSocAndRuntime) {
  EXPECT_EQ(npu_->kind(), DeviceKind::kNpu);
  const std::string name = npu_->name();
  EXPECT_NE(name.find("npu(qnn-htp: Hexagon v73 HTP, SoC 60, fp16; QNN core API 2."),
            std::string::npos)
      << name;
  auto v75 = qnn_npu("htp_arch=v75;soc_model=57");
  ASSERT_TRUE(v75.ok()) << v75.status().to_string();
  EXPECT_NE((*v75)->name().find("Hexagon v75 HTP, SoC 57"), std::string::npos) << (*v75)->name();
}

TEST_F(QnnRuntime, AnswersHonestlyPerOpAndType) {
  Problem c;
  c.g.set_batch_tokens(1);
  const NodeId x = c.input(make_desc(kF32, 64).ne);
  const NodeId mm32 = add(c.g, OpKind::kMatMul, {c.weight(kF32, 64, 8), x});
  const NodeId mm16 = add(c.g, OpKind::kMatMul, {c.weight(GgmlType::kF16, 64, 8), x});
  const NodeId mmq = add(c.g, OpKind::kMatMul, {c.weight(GgmlType::kQ8_0, 64, 8), x});
  OpParams eps;
  eps.eps = 1e-6f;
  const NodeId norm = add(c.g, OpKind::kRmsNorm, {x}, eps);
  const NodeId silu = add(c.g, OpKind::kSilu, {x});
  const NodeId soft = add(c.g, OpKind::kSoftmax, {x});
  EXPECT_EQ(npu_->supports(c.g, mm32).level, Support::kNative);
  EXPECT_EQ(npu_->supports(c.g, mm16).level, Support::kNative);
  EXPECT_EQ(npu_->supports(c.g, norm).level, Support::kNative);
  EXPECT_EQ(npu_->supports(c.g, mmq).level, Support::kNative);  // dequantized at compile
  EXPECT_EQ(npu_->supports(c.g, silu).level, Support::kNative);
  EXPECT_EQ(npu_->supports(c.g, soft).level, Support::kNative);
  // Not in the plugin ABI: always elsewhere.
  EXPECT_EQ(npu_->supports(c.g, add(c.g, OpKind::kGeluErf, {x})).level, Support::kUnsupported);
  // A quantized KV cache is refused by type.
  const NodeId kq = c.state(make_desc(GgmlType::kQ8_0, 64, 1, 4), "kq");
  const NodeId kw = add(c.g, OpKind::kCacheWrite,
                        {kq, c.input(make_desc(kF32, 64, 1, 1).ne), c.ints({0}, "slots")});
  EXPECT_EQ(npu_->supports(c.g, kw).level, Support::kUnsupported);
  Problem seven;
  seven.g.set_batch_tokens(7);
  const NodeId a = seven.input(make_desc(kF32, 16, 7).ne);
  const OpSupport s = npu_->supports(seven.g, add(seven.g, OpKind::kAdd, {a, a}));
  EXPECT_EQ(s.level, Support::kUnsupported);
  EXPECT_NE(s.reason.find("{1, 128}"), std::string::npos) << s.reason;
}

// y = rms_norm(W x + b) * g at 1 and 128 tokens, F16 weights: fp16-sized errors, not worse.
TEST_F(QnnRuntime, MatMulAddRmsNormMatchesTheReference) {
  for (int32_t tokens : {1, 128}) {
    Problem c;
    c.seed = 7;
    c.g.set_batch_tokens(tokens);
    const NodeId x = c.input(make_desc(kF32, 256, tokens).ne, 1.0f);
    const NodeId mm = add(c.g, OpKind::kMatMul, {c.weight(GgmlType::kF16, 256, 96), x});
    const NodeId y = add(c.g, OpKind::kAdd, {mm, c.weight(kF32, 96)});
    OpParams eps;
    eps.eps = 1e-6f;
    c.out = add(c.g, OpKind::kRmsNorm, {y, c.weight(kF32, 96, 1, 1.0f)}, eps);
    const Outcome got = run_problem(c, npu_.get());
    const Outcome want = run_problem(c, nullptr);
    ASSERT_TRUE(got.status.ok()) << got.status.to_string();
    ASSERT_TRUE(want.status.ok()) << want.status.to_string();
    const double e = nmse(got.out, want.out);
    std::printf("[ err ] T=%d matmul+add+rms_norm nmse %.3g\n", tokens, e);
    EXPECT_LE(e, 1e-5);
    EXPECT_GT(e, 0.0);  // fp16 compute, not a copy of the reference
  }
}

TEST_F(QnnRuntime, AGraphItCannotLowerIsRefusedAndTheBackendStaysUsable) {
  Problem bad;
  bad.g.set_batch_tokens(1);
  const NodeId x = bad.input(make_desc(kF32, 64).ne);
  OpParams eps;
  eps.eps = 1e-6f;
  // RmsNorm with a computed weight: every op kind is in the caps, but this cannot be lowered.
  bad.out = add(bad.g, OpKind::kRmsNorm, {x, add(bad.g, OpKind::kSilu, {x})}, eps);
  const Outcome refused = run_problem(bad, npu_.get());
  ASSERT_FALSE(refused.status.ok());
  EXPECT_NE(refused.status.message().find("RmsNorm needs a constant [ne0] weight"),
            std::string::npos)
      << refused.status.to_string();
  Problem good;
  good.g.set_batch_tokens(1);
  const NodeId a = good.input(make_desc(kF32, 64).ne);
  good.out = add(good.g, OpKind::kMul, {a, good.input(make_desc(kF32, 64).ne, 1.0f, "b")});
  const Outcome got = run_problem(good, npu_.get());
  ASSERT_TRUE(got.status.ok()) << got.status.to_string();
  const Outcome want = run_problem(good, nullptr);
  EXPECT_LE(nmse(got.out, want.out), 1e-5);
}

// Gemma 3's per-head q / k norm: RmsNorm over ne0 = 16 of [16, 4, 128] (HTP's RmsNorm over the
// last axis of a rank-4 tensor was wrong, NMSE 0.5; the plugin normalizes rows of a rank-2 view).
TEST_F(QnnRuntime, PerHeadRmsNormOfA3dTensor) {
  Problem c;
  c.seed = 3;
  c.g.set_batch_tokens(128);
  OpParams eps;
  eps.eps = 1e-6f;
  const NodeId x = c.input(make_desc(kF32, 16, 4, 128).ne, 3.0f);
  c.out = add(c.g, OpKind::kRmsNorm, {x, c.weight(kF32, 16, 1, 1.0f)}, eps);
  const Outcome got = run_problem(c, npu_.get());
  const Outcome want = run_problem(c, nullptr);
  ASSERT_TRUE(got.status.ok()) << got.status.to_string();
  const double e = nmse(got.out, want.out);
  std::printf("[ err ] per-head rms_norm [16, 4, 128] nmse %.3g\n", e);
  EXPECT_LE(e, 1e-6);
}

}  // namespace
}  // namespace geniex::backends::qnn_test
