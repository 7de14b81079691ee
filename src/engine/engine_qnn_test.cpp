// The QNN HTP plugin seen from the public API. Without Qualcomm's runtime the plugin says where it
// looked and Device::automatic() goes on without it (the tiny model runs on the CPU, same tokens).
// With the runtime (scripts/setup.sh installs PyPI onnxruntime-qnn): --explain-placement names the
// emulated HTP target, and whatever the scheduler places on it agrees with the CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "backends/npu/qnn/qnn_test_env.h"
#include "engine/placement_test_util.h"

namespace geniex {
namespace {

using namespace placement_test;  // NOLINT(build/namespaces)

std::vector<int32_t> greedy_tokens(Model& m, int n) {
  auto g = m.generate(std::span<const int32_t>(some_tokens(12, m.info().n_vocab)), greedy(n));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? g->tokens : std::vector<int32_t>{};
}

TEST(EngineQnn, WithoutTheRuntimeAutoRunsOnTheCpu) {
  const auto empty = std::filesystem::path(::testing::TempDir()) / "geniex_qnn_absent";
  std::filesystem::create_directories(empty);
  ASSERT_EQ(setenv("GENIEX_QNN_LIB_DIR", empty.c_str(), 1), 0);
  std::vector<std::string> log;
  Model autom = load_on(tiny("llama"), Device::automatic(), &log);
  unsetenv("GENIEX_QNN_LIB_DIR");
  const std::string all = joined(log);
  EXPECT_NE(all.find("QNN runtime not found at " + empty.string()), std::string::npos) << all;
  EXPECT_EQ(autom.info().placement.find("npu("), std::string::npos) << autom.info().placement;
  Model cpu = load_on(tiny("llama"), Device::cpu());
  EXPECT_EQ(greedy_tokens(autom, 6), greedy_tokens(cpu, 6));
}

TEST(EngineQnn, WithTheRuntimeExplainNamesTheTargetAndLogitsAgree) {
  const auto env = npu_qnn::testing::qnn_test_env();
  if (const std::string why = env.skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::vector<std::string> log;
  Model npu = load_on(tiny("llama"), Device::npu(), &log);
  const std::string ex = npu.explain_placement();
  EXPECT_NE(ex.find("qnn-htp: Hexagon v73 HTP, SoC 60"), std::string::npos)
      << ex << "\n"
      << joined(log) << " [" << env.context() << "]";
  std::printf("[ placement ] %s\n", npu.info().placement.c_str());
  Model cpu = load_on(tiny("llama"), Device::cpu());
  const auto toks = some_tokens(130, cpu.info().n_vocab);
  auto a = cpu.logits(toks);
  auto b = npu.logits(toks);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().to_string();
  const Agreement ag = compare(*a, *b, static_cast<size_t>(cpu.info().n_vocab));
  std::printf(
      "[ measure ] tiny llama, Device::npu() with the QNN plugin vs CPU over 130 tokens: "
      "top-1 %.4f, KL %.3g\n",
      ag.top1, ag.kl);
  EXPECT_GE(ag.top1, 0.95);
  EXPECT_LE(ag.kl, 1e-3);
}

}  // namespace
}  // namespace geniex
