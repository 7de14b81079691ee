// Model::embed against transformers / sentence-transformers (tests/data/embed/embed_goldens.json,
// made by scripts/goldens/make_tiny_embed.py): a tiny BERT converted with llama.cpp's converter
// and the tiny llama / qwen3 decoders, every pooling, cosine >= 0.9999 per input; batched calls
// equal single ones; normalisation, dimensions and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex {
namespace {

std::string src_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return root ? root : ".";
}

const nlohmann::json& goldens() {
  static const nlohmann::json j = [] {
    std::ifstream f(src_dir() + "/tests/data/embed/embed_goldens.json");
    EXPECT_TRUE(f.good());
    return nlohmann::json::parse(f);
  }();
  return j;
}

Model load(const std::string& path, int32_t n_batch = 512) {
  auto m = ModelBuilder(path)
               .with_device(Device::cpu())
               .with_context_size(128)
               .with_batch_size(n_batch)
               .with_threads(2)
               .build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

double cosine(const std::vector<float>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

std::vector<std::vector<int32_t>> ids_of(const nlohmann::json& m) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& ids : m["ids"]) out.push_back(ids.get<std::vector<int32_t>>());
  return out;
}

class EmbedGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(EmbedGolden, MatchesTransformersForEveryPooling) {
  const auto& m = goldens()["models"][GetParam()];
  Model model = load(src_dir() + "/tests/data/embed/" + m["gguf"].get<std::string>());
  const auto inputs = ids_of(m);
  // EmbeddingGemma's sentence-transformers pipeline ends with Normalize: compare normalised.
  const bool normalized = m["source"].get<std::string>().find("Normalize") != std::string::npos;
  for (const char* p : {"mean", "cls", "last"}) {
    if (!m.contains(p)) continue;
    EmbeddingConfig cfg;
    cfg.pooling = *parse_pooling(p);
    cfg.normalize = normalized;
    auto e = model.embed(std::span<const std::vector<int32_t>>(inputs), cfg);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    ASSERT_EQ(e->vectors.size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto want = m[p][i].get<std::vector<double>>();
      ASSERT_EQ(e->vectors[i].size(), want.size());
      EXPECT_GE(cosine(e->vectors[i], want), 0.9999) << GetParam() << " " << p << " input " << i;
      // Not normalised: the same length too.
      double na = 0, nb = 0;
      for (size_t c = 0; c < want.size(); ++c) {
        na += static_cast<double>(e->vectors[i][c]) * e->vectors[i][c];
        nb += want[c] * want[c];
      }
      EXPECT_NEAR(std::sqrt(na), std::sqrt(nb), 1e-3 * std::sqrt(nb)) << p << " input " << i;
    }
  }
}

TEST_P(EmbedGolden, TextsTokenizeAsTransformersDoes) {
  const auto& m = goldens()["models"][GetParam()];
  Model model = load(src_dir() + "/tests/data/embed/" + m["gguf"].get<std::string>());
  const auto texts = m["texts"].get<std::vector<std::string>>();
  const auto inputs = ids_of(m);
  auto by_text = model.embed(std::span<const std::string>(texts));
  auto by_ids = model.embed(std::span<const std::vector<int32_t>>(inputs));
  ASSERT_TRUE(by_text.ok()) << by_text.status().to_string();
  ASSERT_TRUE(by_ids.ok()) << by_ids.status().to_string();
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(by_text->n_tokens[i], static_cast<int32_t>(inputs[i].size())) << texts[i];
    EXPECT_EQ(by_text->vectors[i], by_ids->vectors[i]) << texts[i];
  }
}

TEST_P(EmbedGolden, BatchedEqualsSingle) {
  const auto& m = goldens()["models"][GetParam()];
  // A small n_batch splits the 8 inputs over several passes of several sequences each.
  Model model = load(src_dir() + "/tests/data/embed/" + m["gguf"].get<std::string>(), 24);
  const auto inputs = ids_of(m);
  auto all = model.embed(std::span<const std::vector<int32_t>>(inputs));
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ(all->prompt_tokens, [&] {
    int32_t n = 0;
    for (const auto& in : inputs) n += static_cast<int32_t>(in.size());
    return n;
  }());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto one = model.embed(std::span<const std::vector<int32_t>>(&inputs[i], 1));
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->vectors[0].size(), all->vectors[i].size());
    for (size_t c = 0; c < all->vectors[i].size(); ++c) {
      EXPECT_NEAR(one->vectors[0][c], all->vectors[i][c], 1e-5) << "input " << i << " dim " << c;
    }
    double n = 0;
    for (const float x : all->vectors[i]) n += static_cast<double>(x) * x;
    EXPECT_NEAR(n, 1.0, 1e-5);  // normalised by default
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EmbedGolden,
                         ::testing::Values("bert", "llama", "qwen3", "gemma3", "gemma-embedding"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Embed, EmbeddingGemmaLimitsInputsToHalfItsWindow) {
  // Its sliding window (128) is symmetric: inputs up to 65 tokens see every token both ways, as
  // ours does; longer ones are refused rather than answered differently.
  Model model = load(src_dir() + "/tests/data/embed/tiny-gemma-embedding-f32.gguf");
  EXPECT_EQ(model.info().pooling, "mean");
  const std::vector<std::vector<int32_t>> ok = {std::vector<int32_t>(65, 5)};
  EXPECT_TRUE(model.embed(std::span<const std::vector<int32_t>>(ok)).ok());
  const std::vector<std::vector<int32_t>> too_long = {std::vector<int32_t>(66, 5)};
  EXPECT_EQ(model.embed(std::span<const std::vector<int32_t>>(too_long)).status().code(),
            StatusCode::kOutOfRange);
}

TEST(Embed, DeclaredPoolingAndInfo) {
  Model bert = load(src_dir() + "/tests/data/embed/tiny-bert-f32.gguf");
  EXPECT_EQ(bert.info().architecture, "bert");
  EXPECT_EQ(bert.info().pooling, "mean");  // from sentence-transformers' Pooling module
  EXPECT_TRUE(bert.info().embedding_only);
  EXPECT_EQ(bert.info().n_embd, 64);
  Model llama = load(src_dir() + "/tests/data/models/tiny-llama-f32.gguf");
  EXPECT_EQ(llama.info().pooling, "mean");  // no declaration: mean
  EXPECT_FALSE(llama.info().embedding_only);
}

TEST(Embed, DimensionsTruncateAndRenormalise) {
  Model model = load(src_dir() + "/tests/data/embed/tiny-bert-f32.gguf");
  const std::vector<std::string> texts = {"the cat sat on the mat"};
  EmbeddingConfig raw;
  raw.normalize = false;
  auto full = model.embed(std::span<const std::string>(texts), raw);
  EmbeddingConfig cut;
  cut.dimensions = 16;
  auto part = model.embed(std::span<const std::string>(texts), cut);
  ASSERT_TRUE(full.ok() && part.ok());
  ASSERT_EQ(part->vectors[0].size(), 16u);
  EXPECT_EQ(part->n_dims, 16);
  double n = 0;
  for (size_t c = 0; c < 16; ++c)
    n += static_cast<double>(full->vectors[0][c]) * full->vectors[0][c];
  for (size_t c = 0; c < 16; ++c) {
    EXPECT_NEAR(part->vectors[0][c], full->vectors[0][c] / std::sqrt(n), 1e-6);
  }
  EmbeddingConfig none;
  none.pooling = Pooling::kNone;
  auto rows = model.embed(std::span<const std::string>(texts), none);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->vectors[0].size(), static_cast<size_t>(rows->n_tokens[0]) * 64);
}

TEST(Embed, Errors) {
  Model model = load(src_dir() + "/tests/data/embed/tiny-bert-f32.gguf");
  EXPECT_EQ(model.embed(std::span<const std::string>()).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<std::vector<int32_t>> empty = {{}};
  EXPECT_EQ(model.embed(std::span<const std::vector<int32_t>>(empty)).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<std::vector<int32_t>> bad = {{2, 100000, 3}};
  EXPECT_EQ(model.embed(std::span<const std::vector<int32_t>>(bad)).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<std::vector<int32_t>> long_input = {std::vector<int32_t>(129, 5)};
  EXPECT_EQ(model.embed(std::span<const std::vector<int32_t>>(long_input)).status().code(),
            StatusCode::kOutOfRange);
  EmbeddingConfig cfg;
  cfg.dimensions = 65;
  const std::vector<std::string> texts = {"hello"};
  EXPECT_EQ(model.embed(std::span<const std::string>(texts), cfg).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(parse_pooling("max").ok());
  // An encoder does not generate, and says why.
  auto g = model.generate("hello");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("only embeds"), std::string::npos);
  EXPECT_FALSE(model.logits(std::vector<int32_t>{2, 3}).ok());
  // The model still embeds after the errors.
  EXPECT_TRUE(model.embed(std::span<const std::string>(texts)).ok());
}

}  // namespace
}  // namespace geniex
