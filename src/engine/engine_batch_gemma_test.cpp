// Continuous batching on the real Gemma 3 270M (Q4_K_M): every request's greedy continuation
// is the same whether it runs alone or in one batch with 7 others. Batched matmuls and attention
// must therefore give every row the same bits as a single-row step (batch invariance): attention
// always is; the Q8_0 / Q5_0 matmuls are with ModelBuilder::with_deterministic (in the default
// fast mode their single-row path sums in another order and a near-tie can flip: 6/8 identical
// when measured).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/real_model.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

TEST(EngineBatchGemma, EightConcurrentChatsEqualRunningAlone) {
  auto built = ModelBuilder(testing_paths::real_model_path())
                   .with_device(Device::cpu())
                   .with_deterministic()
                   .with_context_size(1024)
                   .with_max_sequences(8)
                   .with_threads(2)
                   .build();
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  Model& m = *built;
  const std::vector<std::string> questions = {"What is the capital of France?",
                                              "Write a haiku about the sea.",
                                              "Explain photosynthesis in one sentence.",
                                              "List three prime numbers.",
                                              "Who wrote Hamlet?",
                                              "Translate 'good morning' into Spanish.",
                                              "What is 12 times 12?",
                                              "Name a planet with rings."};
  GenerationConfig greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 32;
  std::vector<std::vector<int32_t>> alone;
  for (const auto& q : questions) {
    m.reset();
    auto g = m.chat(std::vector<ChatMessage>{{"user", q}}, greedy);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    alone.push_back(g->tokens);
  }
  m.reset();
  std::vector<std::vector<int32_t>> together(questions.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < questions.size(); ++i) {
    threads.emplace_back([&, i] {
      auto g = m.chat(std::vector<ChatMessage>{{"user", questions[i]}}, greedy);
      if (g.ok()) together[i] = g->tokens;
    });
  }
  for (auto& t : threads) t.join();
  int same = 0;
  for (size_t i = 0; i < questions.size(); ++i) {
    EXPECT_EQ(together[i], alone[i]) << questions[i];
    same += together[i] == alone[i] ? 1 : 0;
  }
  std::printf("batched == alone for %d/%zu chats\n", same, questions.size());
}

}  // namespace
}  // namespace geniex
