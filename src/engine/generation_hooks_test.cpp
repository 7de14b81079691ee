// GenerationConfig hooks used by front ends (the OpenAI server): per-token log-probabilities
// (logprobs / on_logprobs) and constrained sampling (token_filter, json_schema), on the tiny test
// models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/json_schema/schema.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

std::string tiny_llama() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models/tiny-llama-q8_0.gguf";
}

Model load() {
  auto m = ModelBuilder(tiny_llama()).with_device(Device::cpu()).with_threads(2).build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  return c;
}

// log-softmax of one row, in double.
std::vector<double> log_softmax(const float* row, size_t n) {
  double m = row[0];
  for (size_t i = 1; i < n; ++i) m = std::max(m, static_cast<double>(row[i]));
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += std::exp(row[i] - m);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = row[i] - m - std::log(s);
  return out;
}

TEST(GenerationHooks, LogprobsAreTheRawLogSoftmaxOfEachStep) {
  Model m = load();
  GenerationConfig c = greedy(6);
  c.logprobs = 3;
  std::vector<TokenLogprobs> streamed;
  c.on_logprobs = [&](const TokenLogprobs& lp) { streamed.push_back(lp); };
  auto gen = m.generate("Hello world", c);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  ASSERT_EQ(gen->logprobs.size(), gen->tokens.size());
  ASSERT_EQ(streamed.size(), gen->tokens.size());
  const size_t n_vocab = static_cast<size_t>(m.info().n_vocab);
  // The logits at each generated position, from an empty context.
  std::vector<int32_t> all = gen->prompt_tokens;
  all.insert(all.end(), gen->tokens.begin(), gen->tokens.end() - 1);
  auto logits = m.logits(all);
  ASSERT_TRUE(logits.ok());
  for (size_t i = 0; i < gen->tokens.size(); ++i) {
    const TokenLogprobs& lp = gen->logprobs[i];
    EXPECT_EQ(lp.chosen.token, gen->tokens[i]);
    EXPECT_EQ(streamed[i].chosen.token, lp.chosen.token);
    ASSERT_EQ(lp.top.size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(lp.top[0].token, lp.chosen.token);
    EXPECT_FLOAT_EQ(lp.top[0].logprob, lp.chosen.logprob);
    EXPECT_GE(lp.top[0].logprob, lp.top[1].logprob);
    EXPECT_GE(lp.top[1].logprob, lp.top[2].logprob);
    const size_t pos = gen->prompt_tokens.size() - 1 + i;
    const auto ref = log_softmax(logits->data() + pos * n_vocab, n_vocab);
    for (const auto& t : lp.top) EXPECT_NEAR(t.logprob, ref[static_cast<size_t>(t.token)], 2e-3);
  }
}

TEST(GenerationHooks, LogprobsOffByDefault) {
  Model m = load();
  auto gen = m.generate("Hello world", greedy(4));
  ASSERT_TRUE(gen.ok());
  EXPECT_TRUE(gen->logprobs.empty());
}

TEST(GenerationHooks, TokenFilterPicksTheMostLikelyAcceptedToken) {
  Model m = load();
  GenerationConfig c = greedy(1);
  c.logprobs = 4;
  auto free_run = m.generate("Hello world", c);
  ASSERT_TRUE(free_run.ok());
  const auto& top = free_run->logprobs[0].top;
  // Reject the two most likely tokens: greedy must take the third.
  const std::set<int32_t> banned = {top[0].token, top[1].token};
  std::vector<int32_t> asked;
  c.token_filter = [&](int32_t t) {
    asked.push_back(t);
    return banned.count(t) == 0;
  };
  auto constrained = m.generate("Hello world", c);
  ASSERT_TRUE(constrained.ok()) << constrained.status().to_string();
  EXPECT_EQ(constrained->tokens[0], top[2].token);
  EXPECT_EQ(asked, (std::vector<int32_t>{top[0].token, top[1].token, top[2].token}));
}

TEST(GenerationHooks, TokenFilterWithSamplingOnlyYieldsAcceptedTokens) {
  Model m = load();
  GenerationConfig c;
  c.temperature = 1.5f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.max_tokens = 12;
  c.seed = 5;
  c.ignore_eos = true;
  c.token_filter = [](int32_t t) { return t % 3 == 0; };
  auto gen = m.generate("Hello world", c);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  ASSERT_EQ(gen->tokens.size(), 12u);
  for (const int32_t t : gen->tokens) EXPECT_EQ(t % 3, 0);
}

TEST(GenerationHooks, TokenFilterAcceptingNothingIsAnError) {
  Model m = load();
  GenerationConfig c = greedy(2);
  c.token_filter = [](int32_t) { return false; };
  auto gen = m.generate("Hello world", c);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument);
}

// A random-weight model held to a schema: whatever it would say, greedy or sampled, the text is
// one JSON value that validates, and generation ends at end-of-generation right after it.
TEST(GenerationHooks, JsonSchemaOutputAlwaysValidates) {
  Model m = load();
  const std::string schema = R"({"type": "object", "properties": {
      "name": {"enum": ["ada", "bob"]},
      "n": {"type": "integer", "minimum": 0, "maximum": 99},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
      "ok": {"type": "boolean"}},
    "required": ["name", "n", "ok"], "additionalProperties": false})";
  auto compiled = engine::json_schema::compile(schema);
  ASSERT_TRUE(compiled.ok());
  for (uint64_t seed : {0u, 1u, 2u, 3u}) {
    GenerationConfig c = greedy(400);
    if (seed > 0) {
      c.temperature = 1.0f;
      c.seed = seed;
    }
    c.json_schema = schema;
    auto gen = m.generate("Hello world", c);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    EXPECT_EQ(gen->stop_reason, StopReason::kEndOfGeneration)
        << "seed " << seed << ": " << gen->text;
    std::string pieces;
    for (const int32_t t : gen->tokens)
      pieces += "[" + std::to_string(t) + ":" + m.token_piece(t) + "]";
    EXPECT_TRUE(engine::json_schema::validates(*compiled, gen->text))
        << "seed " << seed << ": " << nlohmann::json(gen->text).dump() << "\n"
        << pieces;
  }
}

TEST(GenerationHooks, UnsupportedJsonSchemasAreInvalidArguments) {
  Model m = load();
  GenerationConfig c = greedy(4);
  c.json_schema = R"({"type": "string", "pattern": "[a-z]+"})";
  auto gen = m.generate("Hello world", c);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gen.status().message().find("'pattern'"), std::string::npos) << gen.status().message();
  c.json_schema = "{broken";
  EXPECT_EQ(m.generate("Hello world", c).status().code(), StatusCode::kInvalidArgument);
  c.json_schema.clear();
  EXPECT_TRUE(m.generate("Hello world", c).ok()) << "the model stays usable";
}

}  // namespace
}  // namespace geniex
