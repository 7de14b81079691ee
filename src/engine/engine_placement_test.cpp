// Placement through the public API on the tiny models: static-shape padding (what NPU-style
// units need) changes nothing but the work done; explain_placement and stage timings report
// what ran where.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex {
namespace {

// Batch-invariant kernels: a row's result does not depend on how many rows share its step, so
// padded and unpadded steps must agree bit for bit. Set before any kernel runs.
class InvariantKernels : public ::testing::Environment {
 public:
  void SetUp() override { setenv("GENIEX_BATCH_INVARIANT", "1", 1); }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new InvariantKernels);

std::string tiny(const std::string& arch, const std::string& type = "f32") {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models/tiny-" + arch + "-" + type + ".gguf";
}

Model load(const std::string& path, const char* static_batch, std::vector<std::string>* log) {
  if (static_batch != nullptr) setenv("GENIEX_STATIC_BATCH", static_batch, 1);
  ModelBuilder b(path);
  b.with_device(Device::cpu()).with_threads(2).with_context_size(256).with_batch_size(16);
  if (log != nullptr) b.with_log([log](std::string_view l) { log->emplace_back(l); });
  auto m = b.build();
  unsetenv("GENIEX_STATIC_BATCH");
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

std::vector<int32_t> some_tokens(int n, int32_t n_vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 7919 + 13) % n_vocab));
  return t;
}

GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  c.ignore_eos = true;
  return c;
}

TEST(EnginePlacement, StaticShapePaddingChangesNothingButTheWork) {
  for (const std::string arch : {"llama", "gemma3", "qwen2"}) {
    SCOPED_TRACE(arch);
    Model plain = load(tiny(arch), nullptr, nullptr);
    std::vector<std::string> log;
    // Steps padded to 1 or 16 tokens (chunks of 16): 37 prompt tokens -> 16 + 16 + 5 (padded).
    Model padded = load(tiny(arch), "1,16", &log);
    bool said = false;
    for (const auto& l : log)
      said = said || l.find("steps padded to 1/16 tokens") != std::string::npos;
    EXPECT_TRUE(said) << "the padding is logged";
    const auto toks = some_tokens(37, plain.info().n_vocab);
    auto a = plain.logits(toks);
    auto b = padded.logits(toks);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), b->size());
    EXPECT_EQ(0, std::memcmp(a->data(), b->data(), a->size() * sizeof(float)));
    // Generation: prefill chunks then single-token decode steps.
    auto ga = plain.generate(std::span<const int32_t>(toks), greedy(24));
    auto gb = padded.generate(std::span<const int32_t>(toks), greedy(24));
    ASSERT_TRUE(ga.ok() && gb.ok());
    EXPECT_EQ(ga->tokens, gb->tokens);
  }
}

TEST(EnginePlacement, ABadStaticBatchKnobIsAClearError) {
  setenv("GENIEX_STATIC_BATCH", "1,zero", 1);
  auto m = ModelBuilder(tiny("llama")).with_device(Device::cpu()).build();
  unsetenv("GENIEX_STATIC_BATCH");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("'zero' is not a token count"), std::string::npos);
}

TEST(EnginePlacement, ExplainAndStageTimingsDescribeTheRun) {
  Model m = load(tiny("llama"), nullptr, nullptr);
  const std::string ex = m.explain_placement();
  EXPECT_NE(ex.find("== decode step (1 token)"), std::string::npos) << ex;
  EXPECT_NE(ex.find("== prefill step (16 tokens)"), std::string::npos) << ex;
  EXPECT_NE(ex.find("MatMul / F32 F32:"), std::string::npos) << ex;
  EXPECT_NE(ex.find("embedding .. output -> cpu"), std::string::npos) << ex;
  m.reset_stage_timings();
  auto g = m.generate(std::span<const int32_t>(some_tokens(20, m.info().n_vocab)), greedy(5));
  ASSERT_TRUE(g.ok());
  const auto t = m.stage_timings();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].stages, "whole model");
  EXPECT_EQ(t[0].runs, 2 + 4) << "two prefill chunks, then a decode step per token after the first";
  EXPECT_GT(t[0].ms, 0.0);
  EXPECT_EQ(m.engine_stats().fallbacks, 0);
}

}  // namespace
}  // namespace geniex
