// The paged KV cache through the public API on the tiny models: spill under a budget, sliding
// windows over long generations, context shift, and state files — each checked against a fresh
// computation (greedy ids equal, logits within float-summation noise).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/real_model.h"
#include "engine/kv_rotate.h"
#include "geniex/geniex.hpp"
#include "gguf/gguf_reader.h"
#include "graph/ref_ops.h"
#include "models/forward_graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"
#include "quant/quant.h"

namespace geniex {
namespace {

std::string tiny(const std::string& arch, const std::string& type = "f32") {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models/tiny-" + arch + "-" + type + ".gguf";
}

Model load(ModelBuilder b) {
  auto m = b.with_device(Device::cpu()).with_threads(2).build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

ModelBuilder builder(const std::string& path, int32_t n_ctx = 512, int32_t n_batch = 512) {
  ModelBuilder b(path);
  b.with_context_size(n_ctx).with_batch_size(n_batch).with_kv_cache_type(KvCacheType::kF32);
  return b;
}

GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  c.ignore_eos = true;
  return c;
}

std::vector<int32_t> some_tokens(int n, int32_t n_vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 7919 + 13) % n_vocab));
  return t;
}

TEST(EngineKv, SpillUnderABudgetGivesTheSameTokens) {
  for (const std::string arch : {"gemma3", "llama"}) {
    Model plain = load(builder(tiny(arch)));
    // One f32 token costs 2 (K,V) * 2 heads * 16 dims * 4 bytes = 256 bytes per layer, a
    // 32-token block 8 KB: 290 tokens need 10 blocks per full layer (gemma3's five sliding
    // layers keep ~2 each). 100 KB holds one layer's blocks but not all of them.
    Model spilled = load(builder(tiny(arch)).with_kv_budget(100 << 10, ::testing::TempDir()));
    const auto prompt = some_tokens(40, plain.info().n_vocab);
    auto a = plain.generate(std::span<const int32_t>(prompt), greedy(250));
    auto b = spilled.generate(std::span<const int32_t>(prompt), greedy(250));
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(a->tokens, b->tokens) << arch;
    const KvStats st = spilled.kv_stats();
    EXPECT_GT(st.bytes_spilled, 0) << arch;
    EXPECT_LE(st.bytes_resident, 100 << 10) << arch;
    EXPECT_EQ(plain.kv_stats().bytes_spilled, 0);
  }
}

TEST(EngineKv, BudgetBelowOneLayerIsAClearError) {
  Model m = load(builder(tiny("llama")).with_kv_budget(24 << 10, ::testing::TempDir()));
  const auto prompt = some_tokens(300, m.info().n_vocab);
  auto g = m.generate(std::span<const int32_t>(prompt), greedy(4));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(g.status().message().find("budget"), std::string::npos) << g.status().to_string();
  // Nothing is lost: a short prompt still works afterwards.
  auto ok = m.generate(std::span<const int32_t>(prompt.data(), 20), greedy(4));
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
}

TEST(EngineKv, LongDecodeWithSlidingWindowMatchesOnePass) {
  // tiny gemma3: sliding window 16 on 5 of 6 layers, blocks of 32 tokens: after a few hundred
  // single-token steps the local layers hold only their window.
  Model m = load(builder(tiny("gemma3"), 1024));
  const auto prompt = some_tokens(10, m.info().n_vocab);
  auto g = m.generate(std::span<const int32_t>(prompt), greedy(700));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  std::vector<int32_t> all = g->prompt_tokens;
  all.insert(all.end(), g->tokens.begin(), g->tokens.end() - 1);  // the last one was not run
  const KvStats st = m.kv_stats();
  // 710 tokens: the full layer holds them all, each local layer only its window + the 256-token
  // rewind margin + the growing block (~10 blocks of 32).
  EXPECT_LT(st.bytes_resident, static_cast<int64_t>(710 * st.bytes_per_token * 6 / 10));

  Model fresh = load(builder(tiny("gemma3"), 1024));
  auto ref = fresh.logits(all);
  ASSERT_TRUE(ref.ok());
  // The decode's last logits: ask for one more greedy token from the same context.
  auto next = m.generate(std::span<const int32_t>(all), greedy(1));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->timings.cached_tokens, static_cast<int32_t>(all.size()) - 2);
  const auto n_vocab = static_cast<size_t>(m.info().n_vocab);
  const auto last = ref->end() - static_cast<long>(n_vocab);
  EXPECT_EQ(next->tokens[0], static_cast<int32_t>(std::max_element(last, ref->end()) - last));
  // And the whole decoded sequence was the greedy path of the one-pass logits.
  for (size_t t = prompt.size() - 1; t + 1 < all.size(); ++t) {
    const auto row = ref->begin() + static_cast<long>(t * n_vocab);
    ASSERT_EQ(all[t + 1],
              static_cast<int32_t>(std::max_element(row, row + static_cast<long>(n_vocab)) - row))
        << "step " << t;
  }
}

// A shifted context is not a fresh one: the kept tokens' hidden states above layer 0 were
// computed with the dropped tokens in view (llama.cpp's shift is the same approximation). What
// must hold: generation goes on past the context, the first n_keep tokens stay, positions are
// renumbered so the cache never overflows, and the K rotation itself is exact (RotateKRows).
TEST(EngineKv, ContextShiftKeepsGoingPastTheContext) {
  for (const std::string arch : {"llama", "gemma3"}) {
    Model m = load(builder(tiny(arch), 64).with_context_overflow(ContextOverflow::kShift, 4));
    const auto prompt = some_tokens(20, m.info().n_vocab);
    auto g = m.generate(std::span<const int32_t>(prompt), greedy(150));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_EQ(g->tokens.size(), 150u) << arch;  // far past the 64-token context
    EXPECT_EQ(g->stop_reason, StopReason::kMaxTokens);
    const auto kept = m.cached_tokens();
    ASSERT_LE(kept.size(), 64u);
    ASSERT_GT(kept.size(), 14u);
    EXPECT_TRUE(std::equal(prompt.begin(), prompt.begin() + 4, kept.begin()));  // n_keep
    // The newest tokens are the last generated ones (the very last was sampled, not run).
    EXPECT_TRUE(std::equal(kept.end() - 10, kept.end(), g->tokens.end() - 11));
    // Deterministic: the same run again gives the same tokens.
    Model m2 = load(builder(tiny(arch), 64).with_context_overflow(ContextOverflow::kShift, 4));
    auto g2 = m2.generate(std::span<const int32_t>(prompt), greedy(150));
    ASSERT_TRUE(g2.ok());
    EXPECT_EQ(g->tokens, g2->tokens);
    // Without the policy the same run stops at the context.
    Model m3 = load(builder(tiny(arch), 64));
    auto g3 = m3.generate(std::span<const int32_t>(prompt), greedy(150));
    ASSERT_TRUE(g3.ok());
    EXPECT_EQ(g3->stop_reason, StopReason::kContextFull);
    EXPECT_EQ(g3->tokens.size(), 45u);
  }
}

// K rows cached at position p and rotated by -30 equal rows computed at p - 30.
TEST(EngineKv, RotateKRowsMovesKeysExactly) {
  for (const std::string arch : {"llama", "gemma3", "qwen2"}) {
    auto file = gguf::GgufFile::open(tiny(arch));
    ASSERT_TRUE(file.ok());
    auto cfg = models::load_config(*file);
    ASSERT_TRUE(cfg.ok());
    auto w = models::bind_weights(*file, *cfg);
    ASSERT_TRUE(w.ok());
    for (uint32_t il : {0u, cfg->n_layer - 1}) {
      const int64_t d = cfg->head_dim_k, h = cfg->n_head_kv_at(il), n = 5;
      std::vector<float> x(static_cast<size_t>(d * h * n));
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
      graph::RopeParams rp;
      rp.mode = cfg->rope.mode == models::RopeMode::kNeox ? graph::RopeMode::kNeox
                                                          : graph::RopeMode::kNormal;
      rp.n_dims = static_cast<int32_t>(cfg->rope.n_rot);
      rp.base = cfg->rope_base_at(il);
      rp.freq_scale = cfg->rope_freq_scale_at(il);
      const std::vector<int32_t> at = {40, 41, 57, 90, 1000}, moved = {10, 11, 27, 60, 970};
      std::vector<float> factors;  // llama-3 style rope_freqs, when the model has them
      if (const auto* rf = w->layers[il].rope_freqs; rf != nullptr) {
        factors.resize(static_cast<size_t>(rf->ne[0]));
        ASSERT_TRUE(quant::dequantize_row(rf->type, rf->data, factors).ok());
      }
      std::vector<float> k(x.size()), want(x.size());
      ASSERT_TRUE(graph::ref::rope(x, d, h, n, at, rp, factors, k).ok());
      ASSERT_TRUE(graph::ref::rope(x, d, h, n, moved, rp, factors, want).ok());
      for (GgmlType t : {GgmlType::kF32, GgmlType::kF16}) {
        const size_t rb = *ggml_row_bytes(t, static_cast<uint64_t>(d * h));
        const auto row = static_cast<size_t>(d * h);
        std::vector<uint8_t> rows(rb * static_cast<size_t>(n));
        for (size_t r = 0; r < static_cast<size_t>(n); ++r) {
          ASSERT_TRUE(quant::quantize_row(t, std::span<const float>(k.data() + r * row, row),
                                          std::span<uint8_t>(rows.data() + r * rb, rb))
                          .ok());
        }
        ASSERT_TRUE(engine::rotate_k_rows(*cfg, *w, t, il, rows.data(), n, -30).ok());
        std::vector<float> got(x.size());
        for (size_t r = 0; r < static_cast<size_t>(n); ++r) {
          ASSERT_TRUE(quant::dequantize_row(t, std::span<const uint8_t>(rows.data() + r * rb, rb),
                                            std::span<float>(got.data() + r * row, row))
                          .ok());
        }
        const float tol = t == GgmlType::kF32 ? 1e-5f : 4e-3f;  // f16 is rounded twice
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], tol) << arch << " layer " << il << " " << ggml_type_name(t);
        }
      }
    }
  }
}

// A quantized cache holds K after RoPE *and* the Walsh-Hadamard rotation (models::KvRotation;
// Gemma's 256-wide heads: one 256 block). The shift must undo it around RoPE: rows cached as
// H·rope(x, p) and moved by -30 equal H·rope(x, p - 30) up to the 8- / 4-bit rounding.
TEST(EngineKv, RotateKRowsUndoesTheHadamardRotation) {
  auto file = gguf::GgufFile::open(testing_paths::real_model_path());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto cfg = models::load_config(*file);
  ASSERT_TRUE(cfg.ok());
  auto w = models::bind_weights(*file, *cfg);
  ASSERT_TRUE(w.ok());
  const uint32_t il = 0;
  const int64_t d = cfg->head_dim_k, h = cfg->n_head_kv_at(il), n = 4;
  graph::RopeParams rp;
  rp.mode = graph::RopeMode::kNeox;
  rp.n_dims = static_cast<int32_t>(cfg->rope.n_rot);
  rp.base = cfg->rope_base_at(il);
  rp.freq_scale = cfg->rope_freq_scale_at(il);
  std::vector<float> x(static_cast<size_t>(d * h * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  const std::vector<int32_t> at = {40, 57, 90, 1000}, moved = {10, 27, 60, 970};
  std::vector<float> r(x.size()), k(x.size()), want(x.size());
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const int32_t hk = models::kv_rotation(*cfg, t).k;
    ASSERT_EQ(hk, 256) << "Gemma 3's K rotation";
    ASSERT_TRUE(graph::ref::rope(x, d, h, n, at, rp, {}, r).ok());
    ASSERT_TRUE(graph::ref::hadamard(r, hk, k).ok());
    ASSERT_TRUE(graph::ref::rope(x, d, h, n, moved, rp, {}, r).ok());
    ASSERT_TRUE(graph::ref::hadamard(r, hk, want).ok());
    const size_t rb = *ggml_row_bytes(t, static_cast<uint64_t>(d * h));
    const auto row = static_cast<size_t>(d * h);
    std::vector<uint8_t> rows(rb * static_cast<size_t>(n));
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      ASSERT_TRUE(quant::quantize_row(t, std::span<const float>(k.data() + i * row, row),
                                      std::span<uint8_t>(rows.data() + i * rb, rb))
                      .ok());
    }
    ASSERT_TRUE(engine::rotate_k_rows(*cfg, *w, t, il, rows.data(), n, -30).ok());
    std::vector<float> got(x.size());
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      ASSERT_TRUE(quant::dequantize_row(t, std::span<const uint8_t>(rows.data() + i * rb, rb),
                                        std::span<float>(got.data() + i * row, row))
                      .ok());
    }
    // Two roundings, the first one spread over the 256-element block by the un-rotation: blocks
    // whose largest value is ~2.5 have Q8_0 steps of ~0.02 (Q4_0: ~0.3). Without the
    // un-rotation the errors are of the order of the values themselves (~0.5 on average).
    const float tol = t == GgmlType::kQ8_0 ? 0.06f : 0.9f;
    double err = 0.0, worst = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
      err += e;
      worst = std::max(worst, e);
    }
    err /= static_cast<double>(got.size());
    std::printf("%s: mean |error| %.4f, max %.4f\n", ggml_type_name(t).data(), err, worst);
    EXPECT_LT(worst, tol) << ggml_type_name(t);
    EXPECT_LT(err, tol / 6) << ggml_type_name(t);
  }
}

TEST(EngineKv, StateFileResumesInAnotherModelInstance) {
  const std::string path = ::testing::TempDir() + "/engine_state.gxkv";
  Model a = load(builder(tiny("gemma3")));
  const auto prompt = some_tokens(70, a.info().n_vocab);
  auto g1 = a.generate(std::span<const int32_t>(prompt), greedy(30));
  ASSERT_TRUE(g1.ok());
  ASSERT_TRUE(a.save_state(path).ok());
  std::vector<int32_t> turn2 = a.cached_tokens();
  for (int32_t t : some_tokens(9, a.info().n_vocab)) turn2.push_back(t);
  auto cont_a = a.generate(std::span<const int32_t>(turn2), greedy(20));

  Model b = load(builder(tiny("gemma3")));
  Status s = b.load_state(path);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(b.cached_tokens().size(), turn2.size() - 9);
  auto cont_b = b.generate(std::span<const int32_t>(turn2), greedy(20));
  ASSERT_TRUE(cont_a.ok() && cont_b.ok());
  EXPECT_EQ(cont_b->timings.cached_tokens, static_cast<int32_t>(turn2.size()) - 9);
  EXPECT_EQ(cont_a->tokens, cont_b->tokens);

  // Another model (same KV layout rules, different weights/arch) and a damaged file.
  Model other = load(builder(tiny("llama")));
  Status wrong = other.load_state(path);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument) << wrong.to_string();
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
  }
  Status bad = b.load_state(path);
  EXPECT_EQ(bad.code(), StatusCode::kDataLoss) << bad.to_string();
  std::remove(path.c_str());
}

TEST(EngineKv, StateFilesThatAreNotStatesAreRefusedBeforeReading) {
  Model m = load(builder(tiny("gemma3")));
  // /dev/zero never ends: refused by its type, not read until memory runs out.
  Status dev = m.load_state("/dev/zero");
  EXPECT_EQ(dev.code(), StatusCode::kInvalidArgument) << dev.to_string();
  EXPECT_NE(dev.message().find("/dev/zero is a character device"), std::string::npos)
      << dev.to_string();
  Status dir = m.load_state(::testing::TempDir());
  EXPECT_NE(dir.message().find("is a directory"), std::string::npos) << dir.to_string();
  // A (sparse) file larger than any state of this model and context: refused by its size.
  const std::string big = ::testing::TempDir() + "/engine_state_big.gxkv";
  {
    std::ofstream f(big, std::ios::binary);
    f.seekp((int64_t{1} << 32) - 1);
    f.put('\0');
  }
  // Saving into a FIFO would wait for a reader that never comes.
  const std::string fifo = ::testing::TempDir() + "/engine_state.fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status to_fifo = m.save_state(fifo);
  EXPECT_EQ(to_fifo.code(), StatusCode::kInvalidArgument) << to_fifo.to_string();
  EXPECT_NE(to_fifo.message().find("is a FIFO (named pipe)"), std::string::npos)
      << to_fifo.to_string();
  std::remove(fifo.c_str());
  Status huge = m.load_state(big);
  EXPECT_EQ(huge.code(), StatusCode::kResourceExhausted) << huge.to_string();
  EXPECT_NE(huge.message().find("4294967296 bytes; at most"), std::string::npos)
      << huge.to_string();
  std::remove(big.c_str());
}

TEST(EngineKv, BuilderRefusesAbsurdThreadCountsAndContexts) {
  for (int32_t t : {-1, ModelBuilder::kMaxThreads + 1, 1000000}) {
    auto m = builder(tiny("llama")).with_threads(t).build();
    ASSERT_FALSE(m.ok()) << t;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("threads must be in [0, 1024]"), std::string::npos)
        << m.status().to_string();
  }
  auto one = builder(tiny("llama"), 1).build();
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("context size 1 is too small"), std::string::npos)
      << one.status().to_string();
  EXPECT_TRUE(builder(tiny("llama"), 2).with_device(Device::cpu()).with_threads(1).build().ok());
}

TEST(EngineKv, QuantizedCacheNeedsHeadsOfWholeBlocks) {
  auto m = ModelBuilder(tiny("llama")).with_kv_cache_type(KvCacheType::kQ8_0).build();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("Q8_0"), std::string::npos) << m.status().to_string();
}

TEST(EngineKv, ParseKvCacheType) {
  EXPECT_EQ(*parse_kv_cache_type("q4_0"), KvCacheType::kQ4_0);
  EXPECT_EQ(*parse_kv_cache_type("f16"), KvCacheType::kF16);
  EXPECT_FALSE(parse_kv_cache_type("q5_1").ok());
}

}  // namespace
}  // namespace geniex
