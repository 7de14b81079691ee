// load_config on the tiny models (expected values are the HF configs in
// tests/data/models/tiny_models.json), the real Gemma 3 270M, and malformed metadata.
#include "models/model_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "models/model_weights.h"
#include "models/test_util.h"

namespace geniex::models {
namespace {

using test::rewrite;
using test::Rewrite;
using test::tiny_path;

struct TinyCase {
  const char* arch;  // file stem
  Architecture expect_arch;
  uint32_t n_layer;
  float rms_eps;
  float rope_theta;
  RopeScaling scaling;
  bool tied;
};

// From tiny_models.json: hidden 64, 4 heads, 2 KV heads, head_dim 16, intermediate 128,
// vocab 2048, max_position_embeddings 2048 for all.
const TinyCase kTiny[] = {
    {"llama", Architecture::kLlama, 3, 1e-5f, 1e4f, RopeScaling::kLlama3, false},
    {"mistral", Architecture::kLlama, 2, 1e-5f, 1e6f, RopeScaling::kNone, false},
    {"qwen2", Architecture::kQwen2, 2, 1e-6f, 1e6f, RopeScaling::kNone, true},
    {"qwen3", Architecture::kQwen3, 3, 1e-6f, 1e6f, RopeScaling::kNone, true},
    {"gemma3", Architecture::kGemma3, 6, 1e-6f, 1e6f, RopeScaling::kNone, true},
};
const char* const kTypes[] = {"f32", "f16", "q8_0"};

TEST(ModelConfig, TinyModels) {
  for (const TinyCase& tc : kTiny) {
    for (const char* type : kTypes) {
      SCOPED_TRACE(std::string(tc.arch) + "-" + type);
      auto f = gguf::GgufFile::open(tiny_path(tc.arch, type));
      ASSERT_TRUE(f.ok()) << f.status().to_string();
      auto r = load_config(*f);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      const ModelConfig& c = *r;
      EXPECT_EQ(c.arch, tc.expect_arch);
      EXPECT_EQ(c.n_layer, tc.n_layer);
      EXPECT_EQ(c.n_embd, 64u);
      EXPECT_EQ(c.n_head, 4u);
      EXPECT_EQ(c.n_head_kv, std::vector<uint32_t>(tc.n_layer, 2));
      EXPECT_EQ(c.head_dim_k, 16u);
      EXPECT_EQ(c.head_dim_v, 16u);
      EXPECT_EQ(c.n_ff, std::vector<uint32_t>(tc.n_layer, 128));
      EXPECT_EQ(c.n_vocab, 2048u);
      EXPECT_EQ(c.context_length, 2048u);
      EXPECT_FLOAT_EQ(c.rms_eps, tc.rms_eps);
      EXPECT_FLOAT_EQ(c.rope.freq_base, tc.rope_theta);
      EXPECT_EQ(c.rope.n_rot, 16u);
      EXPECT_EQ(c.rope.scaling, tc.scaling);
      EXPECT_FLOAT_EQ(c.rope.freq_scale(), 1.0f);
      EXPECT_EQ(c.rope.has_freq_factors, tc.scaling == RopeScaling::kLlama3);
      EXPECT_EQ(c.rope.mode,
                tc.expect_arch == Architecture::kLlama ? RopeMode::kNorm : RopeMode::kNeox);
      EXPECT_EQ(c.tied_embeddings, tc.tied);
      EXPECT_FLOAT_EQ(c.attn_scale, 0.25f);  // 1/sqrt(16); gemma3 query_pre_attn_scalar 16
      EXPECT_EQ(c.final_logit_softcap, 0.0f);
      EXPECT_EQ(c.attn_logit_softcap, 0.0f);
      EXPECT_EQ(c.has_qkv_bias, tc.expect_arch == Architecture::kQwen2);
      const bool gemma = tc.expect_arch == Architecture::kGemma3;
      EXPECT_EQ(c.has_qk_norm, gemma || tc.expect_arch == Architecture::kQwen3);
      EXPECT_EQ(c.has_post_norms, gemma);
      EXPECT_EQ(c.ffn_act, gemma ? FfnActivation::kGeluTanh : FfnActivation::kSilu);
      EXPECT_FLOAT_EQ(c.embd_scale, gemma ? 8.0f : 1.0f);
      if (gemma) {
        EXPECT_EQ(c.sliding_window, 16u);
        EXPECT_EQ(c.is_sliding, (std::vector<bool>{true, true, true, true, true, false}));
        EXPECT_FLOAT_EQ(c.rope.freq_base_swa, 1e4f);
        EXPECT_FLOAT_EQ(c.rope_base_at(0), 1e4f);
        EXPECT_FLOAT_EQ(c.rope_base_at(5), 1e6f);
      } else {
        EXPECT_EQ(c.sliding_window, 0u);  // mistral / qwen sliding windows are not applied
        EXPECT_EQ(c.is_sliding, std::vector<bool>(tc.n_layer, false));
      }
    }
  }
}

// lfm2: head_count_kv array with 0 on conv layers, the conv width, FFN width from the tensor,
// NEOX rope, QK norm; the weights bind the conv tensors there and token_embd_norm as final norm.
TEST(ModelConfig, TinyLfm2) {
  for (const char* type : kTypes) {
    SCOPED_TRACE(type);
    auto f = gguf::GgufFile::open(tiny_path("lfm2", type));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto r = load_config(*f);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const ModelConfig& c = *r;
    EXPECT_EQ(c.arch, Architecture::kLfm2);
    EXPECT_EQ(c.arch_name, "lfm2");
    EXPECT_EQ(c.n_head_kv, (std::vector<uint32_t>{0, 0, 2, 0, 2, 0}));
    EXPECT_EQ(c.conv_taps, 3u);
    EXPECT_EQ(c.n_ff, std::vector<uint32_t>(6, 128));
    EXPECT_EQ(c.head_dim_k, 16u);
    EXPECT_EQ(c.rope.mode, RopeMode::kNeox);
    EXPECT_FLOAT_EQ(c.rope.freq_base, 1e6f);
    EXPECT_TRUE(c.has_qk_norm);
    EXPECT_TRUE(c.tied_embeddings);
    EXPECT_FLOAT_EQ(c.embd_scale, 1.0f);
    EXPECT_TRUE(c.layer_is_conv(0));
    EXPECT_FALSE(c.layer_is_conv(2));
    EXPECT_EQ(c.layer_state_bytes(0), 4 * 64 * 2);
    EXPECT_EQ(c.layer_state_bytes(4), 0);
    EXPECT_TRUE(c.has_recurrent_state());
    auto w = bind_weights(*f, c);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    EXPECT_EQ(w->output_norm->name, "token_embd_norm.weight");
    EXPECT_EQ(w->output, w->tok_embd);
    EXPECT_NE(w->layers[0].conv_in_proj, nullptr);
    EXPECT_EQ(w->layers[0].conv_kernel->type, GgmlType::kF32);
    EXPECT_EQ(w->layers[0].attn_q, nullptr);
    EXPECT_NE(w->layers[2].attn_q_norm, nullptr);
    EXPECT_EQ(w->layers[2].conv_in_proj, nullptr);
    EXPECT_EQ(w->n_unused, 0u);
  }
}

TEST(ModelConfig, RealGemma3_270m) {
  const std::string path = test::gemma_270m_path();
  auto f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string() << " (run scripts/setup.sh)";
  auto r = load_config(*f);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const ModelConfig& c = *r;
  // HF google/gemma-3-270m: 18 layers, hidden 640, 4 heads, 1 KV head, head_dim 256,
  // intermediate 2048, sliding window 512, rope 1e6 global / 1e4 local, vocab 262144 (GGUF).
  EXPECT_EQ(c.arch, Architecture::kGemma3);
  EXPECT_EQ(c.name, "Gemma 3 270m");
  EXPECT_EQ(c.n_layer, 18u);
  EXPECT_EQ(c.n_embd, 640u);
  EXPECT_EQ(c.n_head, 4u);
  EXPECT_EQ(c.n_head_kv, std::vector<uint32_t>(18, 1));
  EXPECT_EQ(c.head_dim_k, 256u);
  EXPECT_EQ(c.head_dim_v, 256u);
  EXPECT_EQ(c.n_embd_q(), 1024u);
  EXPECT_EQ(c.n_ff, std::vector<uint32_t>(18, 2048));
  EXPECT_EQ(c.n_vocab, 262144u);
  EXPECT_EQ(c.context_length, 32768u);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  EXPECT_EQ(c.rope.mode, RopeMode::kNeox);
  EXPECT_EQ(c.rope.n_rot, 256u);
  EXPECT_FLOAT_EQ(c.rope.freq_base, 1e6f);
  EXPECT_FLOAT_EQ(c.rope.freq_base_swa, 1e4f);  // key absent: default
  EXPECT_EQ(c.rope.scaling, RopeScaling::kNone);
  EXPECT_EQ(c.sliding_window, 512u);
  for (uint32_t il = 0; il < 18; ++il) {
    const bool global = il == 5 || il == 11 || il == 17;
    EXPECT_EQ(c.layer_is_sliding(il), !global) << il;
    EXPECT_FLOAT_EQ(c.rope_base_at(il), global ? 1e6f : 1e4f) << il;
    EXPECT_FLOAT_EQ(c.rope_freq_scale_at(il), 1.0f) << il;
  }
  EXPECT_FLOAT_EQ(c.attn_scale, 1.0f / 16.0f);
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(640.0f));
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_TRUE(c.has_qk_norm);
  EXPECT_TRUE(c.has_post_norms);
  EXPECT_FALSE(c.has_qkv_bias);
  EXPECT_EQ(c.final_logit_softcap, 0.0f);
}

// --- malformed metadata ----------------------------------------------------------------

class ConfigErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = gguf::GgufFile::open(tiny_path("gemma3", "f32"));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    src_ = std::move(f.value());
  }
  /// load_config on a copy with `key` replaced by `value` (or dropped when `drop`).
  Status with_key(const std::string& key, const gguf::Value& value, bool drop = false) {
    Rewrite r;
    r.kv = [&](const std::string& k, gguf::Value& v) {
      if (k != key) return true;
      if (drop) return false;
      v = value;
      return true;
    };
    if (!drop && !src_.find(key)) r.extra_kv.push_back({key, value});
    owned_ = rewrite(src_, r);
    return load_config(owned_.file).status();
  }
  static gguf::Value u32(uint64_t v) { return gguf::Value::of_uint(gguf::ValueType::kUint32, v); }
  static gguf::Value f32(double v) { return gguf::Value::of_float(gguf::ValueType::kFloat32, v); }

  gguf::GgufFile src_;
  test::OwnedGguf owned_;
};

TEST_F(ConfigErrors, UnmodifiedCopyLoads) {
  EXPECT_TRUE(with_key("gemma3.block_count", u32(6)).ok());
}

TEST_F(ConfigErrors, UnknownArchitecture) {
  const Status s = with_key("general.architecture", gguf::Value::of_string("mamba"));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("'mamba'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("llama, qwen2, qwen3, gemma3, lfm2"), std::string::npos)
      << s.message();
}

TEST_F(ConfigErrors, MissingKey) {
  const Status s = with_key("gemma3.embedding_length", {}, /*drop=*/true);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("gemma3.embedding_length"), std::string::npos) << s.message();
  const Status a = with_key("general.architecture", {}, true);
  EXPECT_EQ(a.code(), StatusCode::kNotFound);
  EXPECT_NE(a.message().find("general.architecture"), std::string::npos) << a.message();
}

TEST_F(ConfigErrors, WrongKeyType) {
  const Status s = with_key("gemma3.block_count", gguf::Value::of_string("six"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("gemma3.block_count"), std::string::npos) << s.message();
  const Status e = with_key("gemma3.attention.layer_norm_rms_epsilon", u32(1));
  EXPECT_TRUE(e.ok() || e.code() == StatusCode::kInvalidArgument);  // int read as number is ok
  const Status t = with_key("gemma3.rope.freq_base", gguf::Value::of_string("1e6"));
  EXPECT_EQ(t.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.message().find("gemma3.rope.freq_base"), std::string::npos) << t.message();
}

TEST_F(ConfigErrors, NonsenseValues) {
  struct Bad {
    std::string key;
    gguf::Value value;
  };
  const std::vector<Bad> bad = {
      {"gemma3.attention.head_count", u32(0)},
      {"gemma3.attention.head_count_kv", u32(3)},  // 4 % 3 != 0
      {"gemma3.attention.head_count_kv", u32(0)},
      {"gemma3.block_count", u32(5000)},
      {"gemma3.block_count", u32(0)},
      {"gemma3.embedding_length", u32(0)},
      {"gemma3.feed_forward_length", u32(0)},
      {"gemma3.attention.layer_norm_rms_epsilon", f32(0.0)},
      {"gemma3.attention.layer_norm_rms_epsilon", f32(std::nan(""))},
      {"gemma3.rope.freq_base", f32(-1.0)},
      {"gemma3.rope.dimension_count", u32(17)},  // odd
      {"gemma3.rope.dimension_count", u32(32)},  // > head_dim
      {"gemma3.attention.sliding_window_pattern", u32(0)},
      {"gemma3.feed_forward_length",
       gguf::Value::of_int_array(gguf::ValueType::kInt32, {128, 128})},  // not one per layer
  };
  for (const Bad& b : bad) {
    const Status s = with_key(b.key, b.value);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << b.key << ": " << s.to_string();
    EXPECT_NE(s.message().find(b.key), std::string::npos) << s.message();
  }
}

TEST_F(ConfigErrors, ContextsBeyondInt32AreRefused) {
  // Positions are int32 below load_config: a larger context_length or sliding_window used to be
  // narrowed to a negative number and fail later with a misleading error.
  for (const char* key : {"gemma3.context_length", "gemma3.attention.sliding_window"}) {
    const Status s = with_key(key, u32(3000000000u));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(s.message().find(std::string("'") + key + "' is 3000000000, expected"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("2147483647"), std::string::npos) << s.message();
    EXPECT_TRUE(with_key(key, u32(kMaxContextLength)).ok()) << key;
  }
}

TEST_F(ConfigErrors, HeadDimMustDivideWithoutKeyLength) {
  Rewrite r;
  r.kv = [](const std::string& k, gguf::Value& v) {
    if (k == "gemma3.embedding_length") v = u32(66);
    return k != "gemma3.attention.key_length" && k != "gemma3.attention.value_length";
  };
  owned_ = rewrite(src_, r);
  const Status s = load_config(owned_.file).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not divide"), std::string::npos) << s.message();
}

TEST_F(ConfigErrors, UnknownRopeScaling) {
  const Status s = with_key("gemma3.rope.scaling.type", gguf::Value::of_string("longrope"));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("longrope"), std::string::npos) << s.message();
}

TEST_F(ConfigErrors, OptionalKeysAreHonoured) {
  ASSERT_TRUE(with_key("gemma3.rope.scaling.type", gguf::Value::of_string("linear")).ok());
  ASSERT_TRUE(with_key("gemma3.rope.scaling.factor", f32(8.0)).ok());
  auto c = load_config(owned_.file);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rope.scaling, RopeScaling::kLinear);   // no type key: factor != 1 → linear
  EXPECT_FLOAT_EQ(c->rope_freq_scale_at(5), 0.125f);  // global layer
  EXPECT_FLOAT_EQ(c->rope_freq_scale_at(0), 1.0f);    // sliding layer: unscaled
  ASSERT_TRUE(with_key("gemma3.attention.sliding_window_pattern", u32(3)).ok());
  c = load_config(owned_.file);
  EXPECT_EQ(c->is_sliding, (std::vector<bool>{true, true, false, true, true, false}));
  ASSERT_TRUE(with_key("gemma3.attention.sliding_window_pattern",
                       gguf::Value::of_bool_array({false, true, false, true, false, true}))
                  .ok());
  c = load_config(owned_.file);
  EXPECT_EQ(c->is_sliding, (std::vector<bool>{false, true, false, true, false, true}));
  ASSERT_TRUE(with_key("gemma3.attention.sliding_window", u32(0)).ok());
  c = load_config(owned_.file);
  EXPECT_EQ(c->is_sliding, std::vector<bool>(6, false));
  ASSERT_TRUE(with_key("gemma3.final_logit_softcapping", f32(30.0)).ok());
  c = load_config(owned_.file);
  EXPECT_FLOAT_EQ(c->final_logit_softcap, 30.0f);
  ASSERT_TRUE(with_key("gemma3.attention.head_count_kv",
                       gguf::Value::of_int_array(gguf::ValueType::kInt32, {1, 2, 4, 1, 2, 4}))
                  .ok());
  c = load_config(owned_.file);
  EXPECT_EQ(c->n_head_kv, (std::vector<uint32_t>{1, 2, 4, 1, 2, 4}));
  EXPECT_EQ(c->n_embd_k_gqa(2), 64u);
}

TEST(ModelConfig, Llama3FreqFactorsMatchTheTensor) {
  // tiny-llama: rope_type llama3, theta 1e4, factor 8, low 1, high 4, original ctx 256.
  auto f = gguf::GgufFile::open(tiny_path("llama", "f32"));
  ASSERT_TRUE(f.ok());
  const gguf::TensorInfo* t = f->find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->ne[0], 8u);
  const std::vector<float> ff = llama3_freq_factors(1e4f, 16, 8.0f, 1.0f, 4.0f, 256);
  ASSERT_EQ(ff.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    float stored = 0;
    std::memcpy(&stored, t->data.data() + i * sizeof(float), sizeof(float));
    EXPECT_NEAR(ff[i], stored, 1e-5f * stored) << i;
  }
  EXPECT_FLOAT_EQ(ff[0], 1.0f);
  EXPECT_FLOAT_EQ(ff[7], 8.0f);
}

}  // namespace
}  // namespace geniex::models
