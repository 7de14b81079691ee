// The public C++ API on the tiny test models: logits through the engine (CPU backend, KV cache,
// chunked prefill) against transformers, and generate/chat behaviour — streaming, cancel,
// seeds, stop strings, prefix reuse, and the errors users hit (bad path, unknown
// architecture, missing tensor, prompt longer than the context).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "models/npy.h"

namespace geniex {
namespace {

std::string src_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return root ? root : ".";
}
std::string tiny(const std::string& arch, const std::string& type = "f32") {
  return src_dir() + "/tests/data/models/tiny-" + arch + "-" + type + ".gguf";
}

Model load(const std::string& path, int32_t n_ctx = 256, int32_t n_batch = 512,
           KvCacheType kv = KvCacheType::kF16) {
  auto m = ModelBuilder(path)
               .with_device(Device::cpu())
               .with_context_size(n_ctx)
               .with_batch_size(n_batch)
               .with_kv_cache_type(kv)
               .with_threads(2)
               .build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  return c;
}

// ---- logits through the engine vs transformers --------------------------------------------

class EngineVsHf : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineVsHf, ChunkedPrefillAndDecodeMatchTransformers) {
  const std::string arch = GetParam();
  std::ifstream in(src_dir() + "/tests/data/models/tiny_models.json");
  const auto doc = nlohmann::json::parse(in);
  const auto ids = doc.at("models").at(arch).at("ids").get<std::vector<int32_t>>();
  auto ref = models::read_npy(src_dir() + "/tests/data/models/tiny-" + arch + ".logits.npy");
  ASSERT_TRUE(ref.ok());
  const size_t V = 2048, T = ids.size();
  double lo = 1e30, hi = -1e30;
  for (float v : ref->data) {
    lo = std::min(lo, static_cast<double>(v));
    hi = std::max(hi, static_cast<double>(v));
  }
  // F32 KV (exact), prefill in chunks of 7 so every chunk attends to earlier ones via the cache.
  Model m = load(tiny(arch), 256, 7, KvCacheType::kF32);
  auto logits = m.logits(ids);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  ASSERT_EQ(logits->size(), T * V);
  double max_err = 0;
  for (size_t i = 0; i < T * V; ++i) {
    max_err = std::max(max_err, std::fabs(static_cast<double>((*logits)[i]) - ref->data[i]));
  }
  std::printf("%s: engine (F32 KV, 7-token chunks) vs HF: max |d| %.3g, logit range %.3g\n",
              arch.c_str(), max_err, hi - lo);
  EXPECT_LE(max_err, 1e-3 * (hi - lo));

  // Greedy decode one token at a time equals the argmax of the full-sequence logits computed
  // over its own output (KV cache consistency, F16 cache as shipped).
  Model g = load(tiny(arch));
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 8);
  auto gen = g.generate(std::span<const int32_t>(prompt), greedy(12));
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
  auto full = g.logits(std::span<const int32_t>(all).first(all.size() - 1));
  ASSERT_TRUE(full.ok());
  for (size_t s = 0; s < gen->tokens.size(); ++s) {
    const float* row = full->data() + (prompt.size() - 1 + s) * V;
    const auto best = std::max_element(row, row + V) - row;
    // Ties within f16 noise could flip: require the chosen token to be within 1e-2 of the max.
    EXPECT_LE(row[best] - row[gen->tokens[s]], 1e-2) << arch << " step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, EngineVsHf,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma3"),
                         [](const auto& p) { return p.param; });

// logits(tokens, first_row) returns exactly the tail rows of logits(tokens), whether first_row
// falls inside a prefill chunk, on a chunk boundary or after whole chunks that yield no rows.
TEST(EngineLogits, FirstRowReturnsTheTailRows) {
  std::ifstream in(src_dir() + "/tests/data/models/tiny_models.json");
  const auto ids =
      nlohmann::json::parse(in).at("models").at("llama").at("ids").get<std::vector<int32_t>>();
  const size_t V = 2048;
  for (int32_t batch : {7, 64}) {
    Model m = load(tiny("llama"), 256, batch, KvCacheType::kF32);
    auto all = m.logits(ids);
    ASSERT_TRUE(all.ok()) << all.status().to_string();
    for (int32_t first : {1, 7, 20, 32, 63}) {
      auto tail = m.logits(ids, first);
      ASSERT_TRUE(tail.ok()) << tail.status().to_string();
      ASSERT_EQ(tail->size(), (ids.size() - static_cast<size_t>(first)) * V)
          << "batch " << batch << " first " << first;
      double max_err = 0;
      for (size_t i = 0; i < tail->size(); ++i) {
        max_err = std::max(max_err, std::fabs(static_cast<double>((*tail)[i]) -
                                              (*all)[static_cast<size_t>(first) * V + i]));
      }
      EXPECT_LE(max_err, 1e-4) << "batch " << batch << " first " << first;
    }
  }
  Model m = load(tiny("llama"));
  EXPECT_EQ(m.logits(ids, -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.logits(ids, static_cast<int32_t>(ids.size())).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(m.info().add_bos);
  EXPECT_EQ(m.info().bos_token, 2032);  // the tiny Llama 3 vocab's <|begin_of_text|>
}

TEST(EngineDecode, CachedStepGraphAcrossBucketBoundariesMatchesFullRecompute) {
  // decode_one reuses one graph per 256-slot bucket; 300 steps cross a boundary and the sliding
  // window (16) of the tiny gemma3 many times over.
  Model g = load(tiny("gemma3"), 600, 512, KvCacheType::kF32);
  const std::vector<int32_t> prompt = {2, 310, 713, 349, 1902};
  GenerationConfig c = greedy(300);
  c.ignore_eos = true;
  auto gen = g.generate(std::span<const int32_t>(prompt), c);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  ASSERT_EQ(gen->tokens.size(), 300u);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
  auto full = g.logits(std::span<const int32_t>(all).first(all.size() - 1));
  ASSERT_TRUE(full.ok());
  const size_t V = 2048;
  for (size_t s = 0; s < gen->tokens.size(); ++s) {
    const float* row = full->data() + (prompt.size() - 1 + s) * V;
    const auto best = std::max_element(row, row + V) - row;
    ASSERT_LE(row[best] - row[gen->tokens[s]], 1e-4) << "step " << s;
  }
}

// ---- generate / chat behaviour ------------------------------------------------------------

TEST(EngineApi, StreamedPiecesConcatenateToTheText) {
  Model m = load(tiny("qwen2", "q8_0"));
  std::string streamed;
  int calls = 0;
  auto gen = m.generate("Hello world", greedy(16), [&](std::string_view t, int32_t) {
    streamed += t;
    ++calls;
    return true;
  });
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  EXPECT_EQ(gen->tokens.size(), 16u);
  EXPECT_EQ(gen->stop_reason, StopReason::kMaxTokens);
  EXPECT_EQ(streamed, gen->text);
  EXPECT_GT(calls, 1);
  EXPECT_EQ(gen->timings.generated_tokens, 16);
  EXPECT_EQ(gen->timings.prompt_tokens, static_cast<int32_t>(gen->prompt_tokens.size()));
  EXPECT_GT(gen->timings.prompt_ms, 0.0);
  auto text = m.detokenize(gen->tokens);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, gen->text);
}

TEST(EngineApi, CallbackReturningFalseCancels) {
  Model m = load(tiny("llama", "q8_0"));
  int calls = 0;
  auto gen =
      m.generate("Hello world", greedy(50), [&](std::string_view, int32_t) { return ++calls < 3; });
  ASSERT_TRUE(gen.ok());
  EXPECT_EQ(gen->stop_reason, StopReason::kCancelled);
  EXPECT_EQ(calls, 3);
  EXPECT_LT(gen->tokens.size(), 50u);
}

TEST(EngineApi, SameSeedSameTextOtherSeedOtherText) {
  Model m = load(tiny("mistral", "q8_0"));
  GenerationConfig c;
  c.temperature = 1.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.max_tokens = 24;
  c.seed = 1234;
  auto a = m.generate("Hello world", c);
  auto b = m.generate("Hello world", c);
  c.seed = 99;
  auto d = m.generate("Hello world", c);
  ASSERT_TRUE(a.ok() && b.ok() && d.ok());
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_NE(a->tokens, d->tokens);  // 24 draws from a near-flat tiny-model distribution
}

TEST(EngineApi, StopStringSpanningTokensCutsTheText) {
  Model m = load(tiny("llama", "q8_0"));
  auto full = m.generate("Hello world", greedy(24));
  ASSERT_TRUE(full.ok());
  ASSERT_GE(full->text.size(), 12u);
  // A stop string that starts inside one token's text and ends inside a later one.
  const std::string stop = full->text.substr(5, 6);
  GenerationConfig c = greedy(24);
  c.stop = {stop};
  std::string streamed;
  auto cut = m.generate("Hello world", c, [&](std::string_view t, int32_t) {
    streamed += t;
    return true;
  });
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->stop_reason, StopReason::kStopString);
  EXPECT_EQ(cut->text, full->text.substr(0, full->text.find(stop)));
  EXPECT_EQ(streamed, cut->text);
}

TEST(EngineApi, SecondCallReusesTheCachedPrefix) {
  Model m = load(tiny("qwen3", "q8_0"));
  auto prompt = m.tokenize("Hello world, this is a longer prompt");
  ASSERT_TRUE(prompt.ok());
  auto a = m.generate(std::span<const int32_t>(*prompt), greedy(4));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->timings.cached_tokens, 0);
  auto b = m.generate(std::span<const int32_t>(*prompt), greedy(4));
  ASSERT_TRUE(b.ok());
  // All but the last two prompt tokens (a multi-row step gives the same bits as a full prefill).
  EXPECT_EQ(b->timings.cached_tokens, static_cast<int32_t>(prompt->size()) - 2);
  EXPECT_EQ(a->tokens, b->tokens);  // reuse does not change the result
  m.reset();
  auto c = m.generate(std::span<const int32_t>(*prompt), greedy(4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->timings.cached_tokens, 0);
  EXPECT_EQ(a->tokens, c->tokens);
}

TEST(EngineApi, ChatAppliesTheTemplate) {
  Model m = load(tiny("gemma3", "q8_0"));
  std::vector<ChatMessage> msgs = {{"user", "Hi there"}};
  auto text = m.apply_chat_template(msgs);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_NE(text->find("<start_of_turn>user\nHi there<end_of_turn>"), std::string::npos);
  EXPECT_TRUE(text->ends_with("<start_of_turn>model\n"));
  auto gen = m.chat(msgs, greedy(4));
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  auto want = m.tokenize(*text, false, true);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(gen->prompt_tokens, *want);
  std::vector<ChatMessage> bad = {{"wizard", "x"}};
  EXPECT_EQ(m.chat(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(EngineApi, MaxTokensZeroAndContextFull) {
  Model m = load(tiny("qwen2", "q8_0"), 12);
  auto none = m.generate("Hello", greedy(0));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->tokens.empty());
  EXPECT_EQ(none->stop_reason, StopReason::kMaxTokens);
  auto full = m.generate("Hello world", greedy(100));
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->stop_reason, StopReason::kContextFull);
  EXPECT_EQ(full->prompt_tokens.size() + full->tokens.size(), 13u);  // 12 cached + last sampled
}

TEST(EngineApi, ErrorsAreStatusesThatNameTheCause) {
  auto missing = ModelBuilder("/nonexistent/model.gguf").build();
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/model.gguf"), std::string::npos);

  Model m = load(tiny("llama", "q8_0"), 16);
  auto ids = m.tokenize("a b c d e f g h i j k l m n o p q r s t u v w x y z");
  ASSERT_TRUE(ids.ok());
  ASSERT_GE(ids->size(), 16u);
  auto too_long = m.generate(std::span<const int32_t>(*ids), greedy(4));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("context"), std::string::npos);

  GenerationConfig bad = greedy(4);
  bad.temperature = -1.0f;
  EXPECT_EQ(m.generate("Hello", bad).status().code(), StatusCode::kInvalidArgument);
  bad = greedy(-1);
  EXPECT_EQ(m.generate("Hello", bad).status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> out_of_vocab = {1, 5000000};
  EXPECT_EQ(m.generate(std::span<const int32_t>(out_of_vocab)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelBuilder(tiny("llama")).with_context_size(-1).build().status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Device::parse("tpu").status().code(), StatusCode::kInvalidArgument);
}

TEST(EngineApi, ContextSizeZeroIsTheTrainingContext) {
  auto m = ModelBuilder(tiny("llama")).with_context_size(0).build();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_GT(m->info().n_ctx_train, 0);
  EXPECT_EQ(m->info().n_ctx, m->info().n_ctx_train);
}

TEST(EngineApi, ReportsWhereTheChatTemplateComesFrom) {
  auto own = ModelBuilder(tiny("qwen2")).build();
  ASSERT_TRUE(own.ok()) << own.status().to_string();
  EXPECT_EQ(own->info().chat_template_origin, "file");
  auto builtin = ModelBuilder(tiny("gemma3")).build();
  ASSERT_TRUE(builtin.ok()) << builtin.status().to_string();
  EXPECT_TRUE(builtin->info().chat_template_origin.starts_with("builtin:"))
      << builtin->info().chat_template_origin;
}

TEST(EngineApi, ReportsTheSeedAndPrefillProgress) {
  auto m = ModelBuilder(tiny("llama")).with_context_size(256).with_batch_size(8).build();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  GenerationConfig c;
  c.max_tokens = 2;
  std::vector<std::pair<int32_t, int32_t>> progress;
  c.on_prefill_progress = [&](int32_t done, int32_t total) { progress.emplace_back(done, total); };
  std::vector<int32_t> prompt(30);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(10 + i);
  auto g = m->generate(std::span<const int32_t>(prompt), c);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  // 30 tokens in steps of 8: 8, 16, 24, 30.
  ASSERT_EQ(progress.size(), 4u);
  EXPECT_EQ(progress.front(), std::make_pair(8, 30));
  EXPECT_EQ(progress.back(), std::make_pair(30, 30));
  // The reported seed repeats the random run.
  m->reset();
  GenerationConfig again;
  again.max_tokens = 8;
  again.temperature = 1.0f;
  auto a = m->generate(std::span<const int32_t>(prompt), again);
  ASSERT_TRUE(a.ok());
  again.seed = a->seed;
  m->reset();
  auto b = m->generate(std::span<const int32_t>(prompt), again);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->tokens, b->tokens);
}

// Rewrites tiny-llama with an edit and loads it.
Result<Model> load_edited(const std::string& name,
                          const std::function<bool(std::string&, gguf::Value&)>& kv,
                          const std::string& drop_tensor = "",
                          const std::function<void(gguf::GgufWriter&)>& extra = {}) {
  auto src = gguf::GgufFile::open(tiny("llama", "q8_0"));
  EXPECT_TRUE(src.ok());
  gguf::GgufWriter w;
  for (const auto& e : src->metadata()) {
    std::string key = e.key;
    gguf::Value v = e.value;
    if (key == "general.alignment") continue;
    if (!kv(key, v)) continue;
    w.set(key, v);
  }
  for (const auto& t : src->tensors()) {
    if (t.name == drop_tensor) continue;
    std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + std::max<uint32_t>(t.n_dims, 1));
    EXPECT_TRUE(w.add_tensor(t.name, t.type, ne, t.data).ok());
  }
  if (extra) extra(w);
  const auto path =
      (std::filesystem::temp_directory_path() / ("geniex_engine_" + name + ".gguf")).string();
  EXPECT_TRUE(w.write(path).ok());
  auto m = ModelBuilder(path).with_threads(1).build();
  std::filesystem::remove(path);
  return m;
}

TEST(EngineApi, UnknownArchitectureAndMissingTensorAreClearErrors) {
  auto unknown = load_edited("arch", [](std::string& key, gguf::Value& v) {
    if (key == "general.architecture") v = gguf::Value::of_string("mamba9");
    if (key.starts_with("llama.")) key = "mamba9." + key.substr(6);
    return true;
  });
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(unknown.status().message().find("mamba9"), std::string::npos)
      << unknown.status().message();

  auto missing = load_edited(
      "tensor", [](std::string&, gguf::Value&) { return true; }, "blk.1.ffn_down.weight");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("blk.1.ffn_down.weight"), std::string::npos)
      << missing.status().message();
}

Result<Model> load_with_template(const std::string& name, const std::string& tmpl) {
  return load_edited(
      name, [](std::string& key, gguf::Value&) { return key != "tokenizer.chat_template"; }, "",
      [&tmpl](gguf::GgufWriter& w) {
        w.set("tokenizer.chat_template", gguf::Value::of_string(tmpl));
      });
}

TEST(EngineApi, HostileChatTemplateFailsTheLoadWithTheLimit) {
  // Issue 29: a downloaded file's template that would crash or exhaust a chat request.
  std::string deep = "{{ 1";
  for (int i = 0; i < 20000; ++i) deep += " + 1";
  deep += " }}";
  auto m = load_with_template("deep_template", deep);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(m.status().message().find("chat template"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("nested deeper than 500"), std::string::npos)
      << m.status().message();

  m = load_with_template("bomb_template",
                         "{% set s = 'a' * 16000000 %}{{ [s] * 300 }}{{ messages[0].content }}");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(m.status().message().find("exceeds"), std::string::npos) << m.status().message();
}

TEST(EngineApi, ChatTemplateThatDoesNotParseFailsOnlyChat) {
  auto m = load_with_template("broken_template", "{% if %}");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  std::vector<ChatMessage> msgs{{"user", "hi"}};
  auto text = m->apply_chat_template(msgs);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("syntax error"), std::string::npos)
      << text.status().message();
  EXPECT_TRUE(m->generate("Hello", greedy(2)).ok());
}

}  // namespace
}  // namespace geniex
