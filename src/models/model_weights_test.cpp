// bind_weights on every tiny model and the real Gemma 3 270M, plus missing / misshapen tensors.
#include "models/model_weights.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/test_util.h"

namespace geniex::models {
namespace {

using test::rewrite;
using test::Rewrite;
using test::tiny_path;

struct Expect {
  const char* arch;
  size_t n_tensors;  // tensors in the file (all bound)
};
// Per-layer counts: llama/mistral 9, qwen2 12 (q/k/v biases), qwen3 11 (q/k norms), gemma3 13.
const Expect kTiny[] = {
    {"llama", 2 + 1 + 1 + 3 * 9},  // token_embd, output_norm, output, rope_freqs
    {"mistral", 3 + 2 * 9},       {"qwen2", 2 + 2 * 12},
    {"qwen3", 2 + 3 * 11},        {"gemma3", 2 + 6 * 13},
};

void expect_shape(const TensorInfo* t, std::vector<uint64_t> ne) {
  ASSERT_NE(t, nullptr);
  for (size_t i = 0; i < ne.size(); ++i) EXPECT_EQ(t->ne[i], ne[i]) << t->name << " dim " << i;
}

TEST(ModelWeights, TinyModels) {
  for (const Expect& e : kTiny) {
    for (const char* type : {"f32", "f16", "q8_0"}) {
      SCOPED_TRACE(std::string(e.arch) + "-" + type);
      auto f = gguf::GgufFile::open(tiny_path(e.arch, type));
      ASSERT_TRUE(f.ok()) << f.status().to_string();
      auto c = load_config(*f);
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      auto w = bind_weights(*f, *c);
      ASSERT_TRUE(w.ok()) << w.status().to_string();
      EXPECT_EQ(f->tensors().size(), e.n_tensors);
      EXPECT_EQ(w->n_bound, e.n_tensors);
      EXPECT_EQ(w->n_unused, 0u);
      ASSERT_EQ(w->layers.size(), c->n_layer);
      expect_shape(w->tok_embd, {64, 2048});
      expect_shape(w->output_norm, {64});
      expect_shape(w->output, {64, 2048});
      EXPECT_EQ(w->tied_embeddings, c->tied_embeddings);
      EXPECT_EQ(w->output == w->tok_embd, c->tied_embeddings);
      EXPECT_EQ(w->rope_freqs != nullptr, c->rope.has_freq_factors);
      for (const LayerWeights& l : w->layers) {
        expect_shape(l.attn_norm, {64});
        expect_shape(l.attn_q, {64, 64});
        expect_shape(l.attn_k, {64, 32});
        expect_shape(l.attn_v, {64, 32});
        expect_shape(l.attn_output, {64, 64});
        expect_shape(l.ffn_norm, {64});
        expect_shape(l.ffn_gate, {64, 128});
        expect_shape(l.ffn_up, {64, 128});
        expect_shape(l.ffn_down, {128, 64});
        EXPECT_EQ(l.attn_q_b != nullptr, c->has_qkv_bias);
        EXPECT_EQ(l.attn_q_norm != nullptr, c->has_qk_norm);
        EXPECT_EQ(l.post_ffw_norm != nullptr, c->has_post_norms);
        EXPECT_EQ(l.rope_freqs, w->rope_freqs);
        if (c->has_qkv_bias) {
          expect_shape(l.attn_q_b, {64});
          expect_shape(l.attn_k_b, {32});
          expect_shape(l.attn_v_b, {32});
        }
        if (c->has_qk_norm) {
          expect_shape(l.attn_q_norm, {16});
          expect_shape(l.attn_k_norm, {16});
        }
        if (c->has_post_norms) {
          expect_shape(l.post_attention_norm, {64});
          expect_shape(l.post_ffw_norm, {64});
        }
        EXPECT_EQ(l.attn_norm->type, GgmlType::kF32);
      }
    }
  }
}

TEST(ModelWeights, RealGemma3_270m) {
  const std::string path = test::gemma_270m_path();
  auto f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string() << " (run scripts/setup.sh)";
  auto c = load_config(*f);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto w = bind_weights(*f, *c);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->n_bound, 236u);
  EXPECT_EQ(w->n_unused, 0u);
  EXPECT_TRUE(w->tied_embeddings);
  expect_shape(w->tok_embd, {640, 262144});
  EXPECT_EQ(w->tok_embd->type, GgmlType::kQ8_0);
  ASSERT_EQ(w->layers.size(), 18u);
  const LayerWeights& l = w->layers[0];
  expect_shape(l.attn_q, {640, 1024});
  expect_shape(l.attn_k, {640, 256});
  expect_shape(l.attn_v, {640, 256});
  expect_shape(l.attn_output, {1024, 640});
  expect_shape(l.attn_q_norm, {256});
  expect_shape(l.ffn_down, {2048, 640});
  EXPECT_EQ(l.attn_output->type, GgmlType::kQ4_K);
  EXPECT_EQ(l.ffn_down->type, GgmlType::kQ6_K);
}

class WeightErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = gguf::GgufFile::open(tiny_path("qwen3", "f32"));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    src_ = std::move(f.value());
  }
  Status bind(const Rewrite& r) {
    owned_ = rewrite(src_, r);
    auto c = load_config(owned_.file);
    if (!c.ok()) return c.status();
    return bind_weights(owned_.file, *c).status();
  }
  gguf::GgufFile src_;
  test::OwnedGguf owned_;
};

TEST_F(WeightErrors, CopyBinds) { EXPECT_TRUE(bind({}).ok()); }

TEST_F(WeightErrors, MissingTensor) {
  Rewrite r;
  r.keep_tensor = [](const TensorInfo& t) { return t.name != "blk.1.attn_k_norm.weight"; };
  const Status s = bind(r);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("1 required tensor(s) missing: blk.1.attn_k_norm.weight"),
            std::string::npos)
      << s.message();
}

TEST_F(WeightErrors, ManyMissingTensorsAreCounted) {
  Rewrite r;
  r.keep_tensor = [](const TensorInfo& t) { return t.name.find("ffn") == std::string::npos; };
  const Status s = bind(r);  // 3 layers x 4 ffn tensors
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("12 required tensor(s) missing"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("blk.0.ffn_norm.weight"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(and 2 more)"), std::string::npos) << s.message();
}

TEST_F(WeightErrors, WrongShape) {
  Rewrite r;
  r.keep_tensor = [](const TensorInfo& t) { return t.name != "blk.2.attn_k.weight"; };
  r.extra_f32 = {{"blk.2.attn_k.weight", {64, 16}}};
  const Status s = bind(r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("blk.2.attn_k.weight: expected shape [64, 32], found [64, 16]"),
            std::string::npos)
      << s.message();
}

TEST_F(WeightErrors, TiedOutputMustMatchVocab) {
  Rewrite r;  // an untied output with the wrong vocab size
  r.extra_f32 = {{"output.weight", {64, 100}}};
  const Status s = bind(r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output.weight: expected shape [64, 2048], found [64, 100]"),
            std::string::npos)
      << s.message();
}

TEST_F(WeightErrors, ExtraTensorsAreCounted) {
  Rewrite r;
  r.extra_f32 = {{"something.else", {4}}, {"blk.0.attn_q.bias", {64}}};  // qwen3 has no biases
  owned_ = rewrite(src_, r);
  auto c = load_config(owned_.file);
  ASSERT_TRUE(c.ok());
  auto w = bind_weights(owned_.file, *c);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->n_unused, 2u);
  EXPECT_EQ(w->n_bound, src_.tensors().size());
}

TEST(ModelWeightsQwen2, MissingBiasIsReported) {
  auto f = gguf::GgufFile::open(tiny_path("qwen2", "f16"));
  ASSERT_TRUE(f.ok());
  Rewrite r;
  r.keep_tensor = [](const TensorInfo& t) { return t.name != "blk.0.attn_v.bias"; };
  auto owned = rewrite(*f, r);
  auto c = load_config(owned.file);
  ASSERT_TRUE(c.ok());
  const Status s = bind_weights(owned.file, *c).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("blk.0.attn_v.bias"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace geniex::models
