// GenerationConfig::cancel: a CancelToken stops a generation from any thread, before the first
// step, during the prompt's prefill (per chunk) and between tokens, on the tiny test models.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "geniex/geniex.hpp"

namespace geniex {
namespace {

std::string tiny_llama() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models/tiny-llama-q8_0.gguf";
}

Model load(int32_t n_batch = 512) {
  auto m = ModelBuilder(tiny_llama())
               .with_device(Device::cpu())
               .with_threads(2)
               .with_batch_size(n_batch)
               .build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  c.ignore_eos = true;
  return c;
}

TEST(CancelToken, AlreadyCancelledEndsBeforeAnyTokenAndTheModelStaysUsable) {
  Model m = load();
  const auto solo = m.generate("Hello world", greedy(8));
  ASSERT_TRUE(solo.ok()) << solo.status().to_string();
  GenerationConfig c = greedy(8);
  auto token = std::make_shared<CancelToken>();
  token->cancel();
  c.cancel = token;
  int pieces = 0;
  const auto gen = m.generate("Hello world", c, [&](std::string_view, int32_t) {
    ++pieces;
    return true;
  });
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  EXPECT_EQ(gen->stop_reason, StopReason::kCancelled);
  EXPECT_TRUE(gen->tokens.empty());
  EXPECT_EQ(pieces, 0);
  // The next call (no token) is unaffected.
  const auto again = m.generate("Hello world", greedy(8));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tokens, solo->tokens);
  EXPECT_EQ(again->text, solo->text);
}

TEST(CancelToken, CancelBetweenTokensKeepsTheTextSoFar) {
  Model m = load();
  GenerationConfig c = greedy(m.info().n_ctx - 16);
  auto token = std::make_shared<CancelToken>();
  c.cancel = token;
  std::string streamed;
  int pieces = 0;
  const auto gen = m.generate("Hello world", c, [&](std::string_view text, int32_t) {
    streamed += text;
    if (++pieces == 3) token->cancel();  // the callback goes on returning true
    return true;
  });
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  EXPECT_EQ(gen->stop_reason, StopReason::kCancelled);
  // The engine runs ahead of the callbacks (their events are queued) and sees the token at its
  // next step: far from max_tokens. Every piece it made reached the callback.
  EXPECT_GE(gen->tokens.size(), 3u);
  EXPECT_LT(static_cast<int32_t>(gen->tokens.size()), c.max_tokens / 2);
  EXPECT_EQ(gen->text, streamed);
}

TEST(CancelToken, CancelDuringPrefillStopsBeforeThePromptIsDone) {
  // Chunks of 2 tokens over a ~1900-token prompt: ~950 engine steps. The token is cancelled at
  // the first progress report the caller sees; the engine stops at its next chunk, long before
  // the prompt's end, and samples nothing.
  Model m = load(/*n_batch=*/2);
  std::string prompt;
  auto ids = m.tokenize(prompt);
  while (ids.ok() && ids->size() < 1900) {
    prompt += "the quick brown fox jumps over the lazy dog ";
    ids = m.tokenize(prompt);
  }
  ASSERT_TRUE(ids.ok());
  ASSERT_LT(static_cast<int32_t>(ids->size()), m.info().n_ctx - 8);
  GenerationConfig c = greedy(4);
  auto token = std::make_shared<CancelToken>();
  c.cancel = token;
  int32_t last_done = 0;
  int32_t total = 0;
  c.on_prefill_progress = [&](int32_t done, int32_t all) {
    last_done = done;
    total = all;
    token->cancel();
  };
  int pieces = 0;
  const auto gen = m.generate(prompt, c, [&](std::string_view, int32_t) {
    ++pieces;
    return true;
  });
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  EXPECT_EQ(gen->stop_reason, StopReason::kCancelled);
  EXPECT_TRUE(gen->tokens.empty());
  EXPECT_EQ(pieces, 0);
  EXPECT_EQ(total, static_cast<int32_t>(ids->size()));
  EXPECT_LT(last_done, total / 2) << "the prefill went on after the cancel";
}

TEST(CancelToken, CancelFromAnotherThreadStopsALongGeneration) {
  Model m = load();
  GenerationConfig c = greedy(100000);
  c.max_tokens = m.info().n_ctx - 16;
  auto token = std::make_shared<CancelToken>();
  c.cancel = token;
  int pieces = 0;
  std::thread canceller;
  const auto gen = m.generate("Hello world", c, [&](std::string_view, int32_t) {
    if (++pieces == 2) {
      canceller = std::thread([token] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        token->cancel();
      });
    }
    return true;
  });
  canceller.join();
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  EXPECT_EQ(gen->stop_reason, StopReason::kCancelled);
  EXPECT_LT(static_cast<int32_t>(gen->tokens.size()), c.max_tokens);
}

}  // namespace
}  // namespace geniex
