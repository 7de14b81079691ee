// Layer offload on the QNN HTP plugin (emulated HTP on x86-64): the tiny gemma3 (6 layers) with
// its last 2 layers and the output head on QNN (ModelBuilder::with_offload_layers(2)), the
// embedding and layers 0..3 on the CPU. Logits vs the committed transformers goldens within an
// fp16 bound, the placement and its explanation, and greedy decode steps through the cut KV
// cache. Skipped only when the runtime is absent AND setup did not install it (qnn_test_env.h).
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

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double{a[i]} - double{b[i]}));
  return m;
}

TEST(QnnOffload, TwoOfSixGemmaLayersOnQnnMatchTransformers) {
  const auto env = npu_qnn::testing::qnn_test_env();
  if (const std::string why = env.skip_reason(); !why.empty()) GTEST_SKIP() << why;

  std::ifstream in(source_dir() + "/tests/data/models/tiny_models.json");
  const auto doc = nlohmann::json::parse(in);
  const auto ids = doc.at("models").at("gemma3").at("ids").get<std::vector<int32_t>>();
  auto hf = models::read_npy(source_dir() + "/tests/data/models/tiny-gemma3.logits.npy");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();

  std::vector<std::string> log;
  ModelBuilder b(tiny("gemma3"));
  // No context cache: every run prepares its graphs (nothing written to the user's cache).
  b.with_device(Device::npu()).with_offload_layers(2).with_threads(2).with_context_size(512);
  b.with_plugin_dir(GENIEX_TEST_PLUGIN_DIR).with_npu_config("cache_dir=none");
  b.with_log([&log](std::string_view l) { log.emplace_back(l); });
  auto built = b.build();
  ASSERT_TRUE(built.ok()) << built.status().to_string() << " [" << env.context() << "]";
  Model npu = std::move(*built);
  const std::string placement = npu.info().placement;
  EXPECT_EQ(placement.rfind("embedding .. layer 3 -> cpu(", 0), 0u) << placement << "\n"
                                                                    << joined(log);
  EXPECT_NE(placement.find("layer 4 .. output -> npu(qnn-htp: Hexagon v73 HTP, SoC 60"),
            std::string::npos)
      << placement << " [" << env.context() << "]";
  const std::string ex = npu.explain_placement();
  EXPECT_NE(ex.find("  note: embedding, layer 0 .. layer 3 on the CPU: --offload-layers 2\n"),
            std::string::npos)
      << ex;

  const auto n_vocab = static_cast<size_t>(npu.info().n_vocab);
  auto got = npu.logits(ids);  // one 128-token prefill chunk (64 tokens, padded), cut at layer 4
  ASSERT_TRUE(got.ok()) << got.status().to_string() << "\n" << joined(log);
  ASSERT_EQ(got->size(), hf->data.size());
  Model cpu = load_on(tiny("gemma3"), Device::cpu());
  auto on_cpu = cpu.logits(ids);
  ASSERT_TRUE(on_cpu.ok());
  const auto [lo, hi] = std::minmax_element(hf->data.begin(), hf->data.end());
  const double range = double{*hi} - double{*lo};
  const Agreement q = compare(hf->data, *got, n_vocab);
  const Agreement c = compare(hf->data, *on_cpu, n_vocab);
  const double q_max = max_abs_diff(hf->data, *got), c_max = max_abs_diff(hf->data, *on_cpu);
  std::printf(
      "[ measure ] tiny gemma3, layers 4-5 + head on QNN HTP (fp16), the rest on the CPU, vs "
      "transformers over %zu tokens: max |d| %.3g (logit range %.3g), KL %.3g, top-1 %.4f; CPU "
      "alone: max |d| %.3g, KL %.3g\n",
      ids.size(), q_max, range, q.kl, q.top1, c_max, c.kl);
  // The whole-model bounds of engine_qnn_model_test (every stage in fp16) hold for a third of
  // the layers (measured: max |d| 0.016 of a logit range of 49, KL 2.5e-7, top-1 1.0).
  EXPECT_LE(q_max, 3e-3 * range);
  EXPECT_LE(q.kl, 1e-4);
  EXPECT_GE(q.top1, 0.95);
  EXPECT_NE(*got, *on_cpu) << "fp16 on the HTP differs from the CPU's arithmetic somewhere";
  // The QNN segment really ran: its stage timings and no fallback.
  bool qnn_ran = false;
  for (const auto& t : npu.stage_timings()) {
    qnn_ran = qnn_ran || (t.stages == "layer 4 .. output" && t.device.rfind("npu(qnn-htp", 0) == 0);
  }
  EXPECT_TRUE(qnn_ran) << joined(log);
  EXPECT_EQ(npu.engine_stats().fallbacks, 0) << joined(log);

  // Decode: one-token graphs (layers 4-5 + head on QNN) over the KV cache both units wrote. Each
  // greedy token is the argmax of the CPU's logits for the same sequence, up to fp16 noise.
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 8);
  expect_greedy_is_cpu_argmax(npu, cpu, prompt, 4, 1e-2 * range, "gemma3 layers 4-5 on QNN");
}

}  // namespace
}  // namespace geniex
