// GenerationConfig hooks used by front ends (the OpenAI server): per-token log-probabilities
// (logprobs / on_logprobs) and constrained sampling (token_filter), on the tiny test models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace geniex
