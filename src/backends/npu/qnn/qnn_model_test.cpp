// Tiny models with every stage on the QNN HTP plugin (emulated HTP on x86-64), through the
// public API: logits vs the committed transformers goldens (tests/data/models) within an fp16
// bound, one-token decode steps through the KV cache, --explain-placement naming the target,
// and the fallbacks: an op the plugin refuses (refuse_ops) and a graph whose finalize fails
// (fail_finalize) land on the CPU with the reason shown and the CPU's tokens. Skipped only when
// the runtime is absent AND setup did not install it (qnn_test_env.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/npu/qnn/qnn_test_env.h"
#include "engine/placement_test_util.h"
#include "models/npy.h"

namespace geniex {
namespace {

using namespace placement_test;  // NOLINT(build/namespaces)

std::string src_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return root != nullptr ? root : ".";
}

class QnnModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto env = npu_qnn::testing::qnn_test_env();
    if (const std::string why = env.skip_reason(); !why.empty()) GTEST_SKIP() << why;
    context_ = env.context();
  }
  std::string context_;
};

// Mean KL(p || q) and top-1 agreement of two logit matrices, plus max |p - q|.
struct Diff {
  Agreement ag;
  double max_abs = 0, range = 0;
};
Diff diff(const std::vector<float>& ref, const std::vector<float>& got, size_t n_vocab) {
  Diff d;
  d.ag = compare(ref, got, n_vocab);
  const auto [lo, hi] = std::minmax_element(ref.begin(), ref.end());
  d.range = static_cast<double>(*hi) - *lo;
  for (size_t i = 0; i < ref.size(); ++i) {
    d.max_abs = std::max(d.max_abs, std::fabs(static_cast<double>(got[i]) - ref[i]));
  }
  return d;
}

TEST_P(QnnModel, EveryStageOnQnnMatchesTransformers) {
  const std::string param = GetParam();  // "arch" (F32 weights) or "arch:type"
  const std::string arch = param.substr(0, param.find(':'));
  const std::string type =
      param.find(':') == std::string::npos ? "f32" : param.substr(param.find(':') + 1);
  std::ifstream in(src_dir() + "/tests/data/models/tiny_models.json");
  const auto doc = nlohmann::json::parse(in);
  const auto ids = doc.at("models").at(arch).at("ids").get<std::vector<int32_t>>();
  auto hf = models::read_npy(src_dir() + "/tests/data/models/tiny-" + arch + ".logits.npy");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();

  std::vector<std::string> log;
  Model npu = load_on(tiny(arch, type), Device::npu(), &log);
  const std::string placement = npu.info().placement;
  EXPECT_EQ(placement.rfind("whole model -> npu(qnn-htp: Hexagon v73 HTP, SoC 60", 0), 0u)
      << placement << "\n"
      << joined(log) << " [" << context_ << "]";
  const std::string ex = npu.explain_placement();
  EXPECT_NE(ex.find("embedding .. output -> npu(qnn-htp"), std::string::npos) << ex;

  const auto n_vocab = static_cast<size_t>(npu.info().n_vocab);
  auto got = npu.logits(ids);  // one 128-token prefill graph (the runtime pads 64 tokens)
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), hf->data.size());
  Model cpu = load_on(tiny(arch, type), Device::cpu());
  auto on_cpu = cpu.logits(ids);
  ASSERT_TRUE(on_cpu.ok());
  const Diff q = diff(hf->data, *got, n_vocab);
  const Diff c = diff(hf->data, *on_cpu, n_vocab);
  std::printf(
      "[ measure ] tiny %s %s, every stage on QNN HTP (fp16) vs transformers over %zu tokens: "
      "max |d| %.3g (logit range %.3g), KL %.3g, top-1 %.4f; CPU (F16 KV): max |d| %.3g, KL "
      "%.3g\n",
      arch.c_str(), type.c_str(), ids.size(), q.max_abs, q.range, q.ag.kl, q.ag.top1, c.max_abs,
      c.ag.kl);
  if (type == "f32") {
    // fp16 activations through every layer (measured: llama max |d| 1.2e-3 of the logit range,
    // KL 2.3e-5; gemma3 5.9e-4, KL 3.2e-7).
    EXPECT_LE(q.max_abs, 3e-3 * q.range);
    EXPECT_LE(q.ag.kl, 1e-4);
  } else {
    // Quantized weights (dequantized at compile) dominate: no worse than the CPU on the same file,
    // which also rounds activations (measured llama Q8_0: KL 1.8e-3 vs the CPU's 3.75e-3).
    EXPECT_LE(q.ag.kl, 1.5 * c.ag.kl + 1e-4);
    EXPECT_LE(q.max_abs, 1.5 * c.max_abs + 3e-3 * q.range);
  }
  EXPECT_GE(q.ag.top1, 0.95);

  // Decode: one-token graphs over the KV cache the prefill graph wrote. Each greedy token is
  // the argmax of the CPU's logits for the same sequence, up to fp16 noise.
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 8);
  auto gen = npu.generate(std::span<const int32_t>(prompt), greedy(8));
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
  auto full = cpu.logits(std::span<const int32_t>(all).first(all.size() - 1));
  ASSERT_TRUE(full.ok());
  for (size_t s = 0; s < gen->tokens.size(); ++s) {
    const float* row = full->data() + (prompt.size() - 1 + s) * n_vocab;
    const float best = *std::max_element(row, row + n_vocab);
    EXPECT_LE(best - row[gen->tokens[s]], 1e-2 * q.range) << arch << " step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, QnnModel, ::testing::Values("llama", "gemma3", "llama:q8_0"),
                         [](const auto& p) {
                           std::string n = p.param;
                           std::replace(n.begin(), n.end(), ':', '_');
                           return n;
                         });

class QnnFallback : public QnnModel {};

// Attention refused by config: the layers run on the CPU (the reason names the op and the
// plugin), the embedding and output head stay on QNN; the text equals the CPU's.
TEST_F(QnnFallback, ARefusedOpSendsItsStagesToTheCpu) {
  std::vector<std::string> log;
  Model m = load_on(tiny("llama"), Device::npu(), &log, "refuse_ops=Attention");
  const std::string ex = m.explain_placement();
  EXPECT_NE(ex.find("=unsupported (op Attention is not supported by npu plugin 'qnn-htp')"),
            std::string::npos)
      << ex;
  EXPECT_NE(ex.find("embedding -> npu(qnn-htp"), std::string::npos) << ex;
  EXPECT_NE(ex.find("layer 0 .. layer 2 -> cpu("), std::string::npos) << ex;
  EXPECT_NE(ex.find("output -> npu(qnn-htp"), std::string::npos) << ex;
  EXPECT_NE(ex.find("cannot run Attention (layer 0)"), std::string::npos) << ex;
  Model cpu = load_on(tiny("llama"), Device::cpu());
  const auto prompt = some_tokens(12, cpu.info().n_vocab);
  auto a = m.generate(std::span<const int32_t>(prompt), greedy(6));
  auto b = cpu.generate(std::span<const int32_t>(prompt), greedy(6));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string();
  EXPECT_EQ(a->tokens, b->tokens);
}

// The first graph finalize fails (as QNN's would): that step's stages fall back to the CPU at run
// time, logged with QNN's message, and the tokens equal the CPU's. (No context-binary cache: a
// cached graph is not finalized.)
TEST_F(QnnFallback, AFailedFinalizeFallsBackAtRunTime) {
  std::vector<std::string> log;
  Model m = load_on(tiny("llama"), Device::npu(), &log, "fail_finalize=1;cache_dir=none");
  Model cpu = load_on(tiny("llama"), Device::cpu());
  const auto prompt = some_tokens(12, cpu.info().n_vocab);
  auto a = m.generate(std::span<const int32_t>(prompt), greedy(6));
  auto b = cpu.generate(std::span<const int32_t>(prompt), greedy(6));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string();
  const std::string all = joined(log);
  std::printf("[ log ] %s\n", all.c_str());
  EXPECT_NE(all.find("fallback: "), std::string::npos) << all;
  EXPECT_NE(all.find("QnnGraph_finalize failed: forced by fail_finalize=1"), std::string::npos)
      << all;
  EXPECT_EQ(a->tokens, b->tokens);
}

}  // namespace
}  // namespace geniex
