// The real Gemma 3 270M Q4_K_M through the public API against llama.cpp's outputs on the same
// file (tests/data/models/gemma3_270m_{greedy,ppl}.json, made by
// scripts/goldens/make_gemma_llamacpp_goldens.py): greedy continuations and perplexity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/real_model.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

std::string data_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models";
}

nlohmann::json load_json(const std::string& name) {
  std::ifstream in(data_dir() + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  return nlohmann::json::parse(in);
}

Model& gemma() {
  static Model* model = [] {
    auto m = ModelBuilder(testing_paths::real_model_path())
                 .with_device(Device::cpu())
                 .with_context_size(2048)
                 .with_threads(2)
                 .build();
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return m.ok() ? new Model(std::move(*m)) : nullptr;
  }();
  return *model;
}

// The prompts are those on which llama.cpp agrees with itself: its greedy continuation with
// the prompt in one batch equals the ones with n_batch 1 and 7 (the golden script drops the
// others and records them). On the dropped ones llama.cpp's own output depends on its batch size
// — its logits move by std ~0.17 (max ~1.3) between those paths, ours differ from it by ~0.19 —
// so token identity there would judge noise, not correctness. A divergence on a kept prompt is
// still only acceptable where llama.cpp's own top-1 margin was within that noise.
constexpr double kFragileMargin = 0.35;

TEST(GemmaFidelity, GreedyContinuationsMatchLlamaCpp) {
  const auto doc = load_json("gemma3_270m_greedy.json");
  ASSERT_TRUE(&gemma() != nullptr);
  GenerationConfig greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = doc.at("settings").at("max_new_tokens").get<int>();
  int identical = 0, n = 0;
  for (const auto& c : doc.at("cases")) {
    const auto prompt = c.at("prompt_ids").get<std::vector<int32_t>>();
    const auto want = c.at("generated_ids").get<std::vector<int32_t>>();
    const auto margin = c.at("top1_margin").get<std::vector<double>>();
    // Our tokenizer must produce llama.cpp's prompt tokens from the same text.
    const bool chat = c.at("kind") == "chat";
    auto ids = gemma().tokenize(c.at("prompt").get<std::string>(), true, chat);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, prompt) << c.at("prompt");
    gemma().reset();
    auto gen = gemma().generate(std::span<const int32_t>(prompt), greedy);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    ++n;
    size_t agree = 0;
    while (agree < want.size() && agree < gen->tokens.size() && want[agree] == gen->tokens[agree]) {
      ++agree;
    }
    const bool same = gen->tokens == want;
    identical += same ? 1 : 0;
    std::printf("[%s] %-40.40s %s (%zu/%zu leading tokens agree; llama.cpp margin there %.4f)\n",
                c.at("kind").get<std::string>().c_str(), c.at("prompt").get<std::string>().c_str(),
                same ? "identical" : "DIFFERS", agree, want.size(),
                agree < margin.size() ? margin[agree] : 0.0);
    if (!same) {
      ASSERT_LT(agree, margin.size());
      EXPECT_LT(margin[agree], kFragileMargin)
          << "diverged from llama.cpp at step " << agree << " where its top-1 was clear";
    }
  }
  std::printf("greedy agreement with llama.cpp: %d/%d identical 48-token continuations\n",
              identical, n);
  EXPECT_GE(identical, 9) << "issue 4 requires at least 9 of 10 identical continuations";
}

TEST(GemmaFidelity, PerplexityWithinOnePercentOfLlamaCpp) {
  const auto doc = load_json("gemma3_270m_ppl.json");
  ASSERT_TRUE(&gemma() != nullptr);
  std::ifstream in(data_dir() + "/ppl_text.txt", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto toks = gemma().tokenize(ss.str(), true, false);
  ASSERT_TRUE(toks.ok());
  ASSERT_EQ(static_cast<int>(toks->size()), doc.at("n_tokens_text").get<int>());
  const int n_ctx = doc.at("n_ctx").get<int>();
  const int n_chunk = static_cast<int>(toks->size()) / n_ctx;
  ASSERT_EQ(n_chunk, doc.at("n_chunk").get<int>());
  const int32_t bos = (*toks)[0];
  const size_t n_vocab = static_cast<size_t>(gemma().info().n_vocab);
  double nll = 0.0;
  int count = 0;
  for (int c = 0; c < n_chunk; ++c) {
    std::vector<int32_t> chunk(toks->begin() + c * n_ctx, toks->begin() + (c + 1) * n_ctx);
    chunk[0] = bos;
    auto logits = gemma().logits(chunk);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    for (int j = n_ctx / 2; j < n_ctx - 1; ++j) {
      const float* row = logits->data() + static_cast<size_t>(j) * n_vocab;
      double mx = row[0];
      for (size_t i = 1; i < n_vocab; ++i) mx = std::max(mx, static_cast<double>(row[i]));
      double sum = 0.0;
      for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - mx);
      nll += -(static_cast<double>(row[chunk[static_cast<size_t>(j) + 1]]) - mx - std::log(sum));
      ++count;
    }
  }
  gemma().reset();
  const double ppl = std::exp(nll / count);
  const double want = doc.at("ppl").get<double>();
  std::printf("perplexity: ours %.4f, llama.cpp %.4f (%+.3f%%) over %d tokens\n", ppl, want,
              100.0 * (ppl / want - 1.0), count);
  EXPECT_EQ(count, doc.at("n_scored").get<int>());
  EXPECT_NEAR(ppl / want, 1.0, 0.01);
}

}  // namespace
}  // namespace geniex
