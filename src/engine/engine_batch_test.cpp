// Continuous batching through the public API: many threads generate at once on one Model; each
// request's greedy output equals running it alone, the engine really batches (fewer steps than
// tokens), cancellation frees the sequence, and more requests than sequences queue up.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex {
namespace {

std::string tiny(const std::string& arch, const std::string& type = "f32") {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models/tiny-" + arch + "-" + type + ".gguf";
}

Model load(const std::string& path, int32_t n_seq) {
  auto m = ModelBuilder(path)
               .with_device(Device::cpu())
               .with_context_size(512)
               .with_max_sequences(n_seq)
               .with_threads(2)
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

std::vector<std::vector<int32_t>> prompts(int n, int32_t n_vocab) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p;
    const int len = 3 + 11 * i % 40;  // different lengths: prefill and decode mix in steps
    for (int j = 0; j < len; ++j) p.push_back((i * 131 + j * 7919 + 5) % n_vocab);
    out.push_back(p);
  }
  return out;
}

TEST(EngineBatch, EightConcurrentRequestsEqualRunningAlone) {
  for (const std::string arch : {"llama", "gemma3", "qwen2", "lfm2"}) {
    Model m = load(tiny(arch), 8);
    const auto ps = prompts(8, m.info().n_vocab);
    std::vector<std::vector<int32_t>> alone;
    for (const auto& p : ps) {
      m.reset();
      auto g = m.generate(std::span<const int32_t>(p), greedy(40));
      ASSERT_TRUE(g.ok()) << g.status().to_string();
      alone.push_back(g->tokens);
    }
    m.reset();
    const auto before = m.engine_stats();
    std::vector<std::vector<int32_t>> together(ps.size());
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (size_t i = 0; i < ps.size(); ++i) {
      threads.emplace_back([&, i] {
        auto g = m.generate(std::span<const int32_t>(ps[i]), greedy(40));
        if (!g.ok()) {
          ++failures;
          return;
        }
        together[i] = g->tokens;
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0);
    for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(together[i], alone[i]) << arch << " #" << i;
    const auto after = m.engine_stats();
    const int64_t steps = after.steps - before.steps;
    const int64_t tokens = after.batched_tokens - before.batched_tokens;
    // 8 x 40 decode tokens + the prompts in far fewer forward passes than one per token.
    EXPECT_GE(tokens, 8 * 39);
    EXPECT_LT(steps, tokens / 3) << arch << ": " << steps << " steps for " << tokens << " tokens";
  }
}

TEST(EngineBatch, MoreRequestsThanSequencesQueueAndAllFinish) {
  Model m = load(tiny("llama"), 2);
  const auto ps = prompts(6, m.info().n_vocab);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (size_t i = 0; i < ps.size(); ++i) {
    threads.emplace_back([&, i] {
      auto g = m.generate(std::span<const int32_t>(ps[i]), greedy(12));
      if (g.ok() && g->tokens.size() == 12u) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(m.engine_stats().active, 0);
  EXPECT_EQ(m.engine_stats().queued, 0);
}

TEST(EngineBatch, CancelledRequestLeavesAndOthersContinue) {
  Model m = load(tiny("llama"), 4);
  const auto ps = prompts(3, m.info().n_vocab);
  std::vector<int32_t> alone;
  {
    auto g = m.generate(std::span<const int32_t>(ps[1]), greedy(60));
    ASSERT_TRUE(g.ok());
    alone = g->tokens;
  }
  m.reset();
  std::thread canceller([&] {
    int pieces = 0;
    auto g = m.generate(std::span<const int32_t>(ps[0]), greedy(500),
                        [&](std::string_view, int32_t) { return ++pieces < 5; });
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g->stop_reason, StopReason::kCancelled);
    EXPECT_LE(g->tokens.size(), 5u + 1u);
  });
  auto g = m.generate(std::span<const int32_t>(ps[1]), greedy(60));
  canceller.join();
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->tokens, alone);
  EXPECT_EQ(m.engine_stats().active, 0);
}

}  // namespace
}  // namespace geniex
