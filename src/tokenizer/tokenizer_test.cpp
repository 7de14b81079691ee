// Encode/decode behaviour beyond the llama.cpp vectors: specials, options, errors, threads.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/test_util.h"

namespace geniex::tokenizer {
namespace {

using testing::load_vocab_file;

std::shared_ptr<const Tokenizer> load(const std::string& name) {
  std::string err;
  auto t = load_vocab_file(name, &err);
  EXPECT_NE(t, nullptr) << name << ": " << err;
  return t;
}

bool contains(const std::vector<int32_t>& v, int32_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

TEST(Tokenizer, SpmBasicsAndBos) {
  auto t = load("llama-spm");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type(), VocabType::kSpm);
  EXPECT_EQ(t->n_vocab(), 32000);
  EXPECT_EQ(t->bos(), 1);
  EXPECT_EQ(t->eos(), 2);
  EXPECT_TRUE(t->is_eog(2));
  EXPECT_FALSE(t->is_eog(15043));
  auto ids = t->encode("Hello world", {.add_special = false});
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{15043, 3186}));
  ids = t->encode("Hello world", {.add_special = true});
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 15043, 3186}));
  ids = t->encode("", {.add_special = true});
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1}));
  ids = t->encode("\t", {.add_special = false});  // byte fallback
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{29871, 12}));
}

TEST(Tokenizer, SpmDecodeLeadingSpaceRules) {
  auto t = load("llama-spm");
  ASSERT_NE(t, nullptr);
  const std::vector<int32_t> hello{15043, 3186};
  EXPECT_EQ(*t->decode(hello), "Hello world");
  const std::vector<int32_t> with_bos{1, 15043, 3186};
  // BOS renders nothing but still consumes the leading-space removal (llama.cpp behaviour).
  EXPECT_EQ(*t->decode(with_bos), " Hello world");
  EXPECT_EQ(*t->decode(with_bos, {.remove_special = true}), " Hello world");
  EXPECT_EQ(*t->decode(with_bos, {.render_special = true}), "<s> Hello world");
  const std::vector<int32_t> bytes{29871, 12};
  EXPECT_EQ(*t->decode(bytes), "\t");
  EXPECT_EQ(t->token_to_piece(12), "\t");
  EXPECT_EQ(t->token_to_piece(15043), " Hello");
  EXPECT_EQ(t->token_to_piece(1), "<s>");
  EXPECT_EQ(t->token_to_piece(1, false), "");
  EXPECT_EQ(t->token_to_piece(-5), "");
}

TEST(Tokenizer, ParseSpecialControlsControlTokens) {
  auto t = load("phi-3");
  ASSERT_NE(t, nullptr);
  const std::string text = "<|user|>\nHi<|end|>\n<|assistant|>";
  auto plain = t->encode(text, {.add_special = false, .parse_special = false});
  auto parsed = t->encode(text, {.add_special = false, .parse_special = true});
  ASSERT_TRUE(plain.ok() && parsed.ok());
  EXPECT_FALSE(contains(*plain, 32010));
  EXPECT_TRUE(contains(*parsed, 32010));
  EXPECT_TRUE(contains(*parsed, 32007));
  EXPECT_TRUE(contains(*parsed, 32001));
  EXPECT_TRUE(t->is_eog(32007));  // <|end|>
  EXPECT_TRUE(t->is_eog(32000));  // <|endoftext|> (eos)
  // Phi-3 strips the whitespace after its special tokens (rstrip attribute).
  EXPECT_EQ(parsed->at(1), *t->find_token("▁Hi"));
  auto back = t->decode(*parsed, {.render_special = true});
  ASSERT_TRUE(back.ok());
  EXPECT_NE(back->find("<|user|>"), std::string::npos);
  auto no_special = t->decode(*parsed);
  ASSERT_TRUE(no_special.ok());
  EXPECT_EQ(no_special->find("<|"), std::string::npos);
}

TEST(Tokenizer, UserDefinedTokensAlwaysSplit) {
  auto t = load("mpt");
  ASSERT_NE(t, nullptr);
  auto id = t->find_token("  ");  // USER_DEFINED double space
  ASSERT_TRUE(id.has_value());
  auto ids = t->encode("a  b", {.add_special = false, .parse_special = false});
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(contains(*ids, *id));
  auto text = t->decode(*ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "a  b");
}

TEST(Tokenizer, Gpt2ControlTextAndCleanSpaces) {
  auto t = load("gpt-2");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->pre_name(), "gpt-2");
  EXPECT_TRUE(t->is_eog(50256));
  auto plain = t->encode("<|endoftext|>", {.add_special = false, .parse_special = false});
  auto parsed = t->encode("<|endoftext|>", {.add_special = false, .parse_special = true});
  ASSERT_TRUE(plain.ok() && parsed.ok());
  EXPECT_GT(plain->size(), 1u);
  EXPECT_EQ(*parsed, (std::vector<int32_t>{50256}));
  // clean_up_tokenization_spaces: " ," -> ",", " 's" -> "'s", " ' " -> "'".
  auto ids = t->encode("Hello , world ' s it 's ok ?", {.add_special = false});
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*t->decode(*ids), "Hello, world's it's ok?");
}

TEST(Tokenizer, RoundTripWhereLossless) {
  for (const char* name : {"llama-spm", "deepseek-llm", "deepseek-coder"}) {
    auto t = load(name);
    ASSERT_NE(t, nullptr);
    for (const char* text : {"Hello world", " leading and trailing ", "Äpfel 🦙 中文 \t\n x",
                             "int main() { return 0; }", "3333333 ½"}) {
      auto ids = t->encode(text, {.add_special = false});
      ASSERT_TRUE(ids.ok());
      auto back = t->decode(*ids);
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, text) << name;
    }
  }
}

TEST(Tokenizer, BertAddsClsAndSep) {
  auto t = load("bert-bge");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type(), VocabType::kWpm);
  auto ids = t->encode("Hello world", {.add_special = true});
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 4u);
  EXPECT_EQ(ids->front(), 101);
  EXPECT_EQ(ids->back(), 102);
  EXPECT_EQ((*ids)[1], 7592);
}

TEST(Tokenizer, InvalidUtf8IsAnError) {
  auto t = load("gpt-2");
  ASSERT_NE(t, nullptr);
  for (std::string bad : {std::string("abc\xff"), std::string("\xc3"), std::string("\xed\xa0\x80"),
                          std::string("\xc0\xaf"), std::string("ok\xf4\x90\x80\x80")}) {
    auto r = t->encode(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("UTF-8"), std::string::npos);
  }
  auto spm = load("llama-spm");
  ASSERT_NE(spm, nullptr);
  EXPECT_EQ(spm->encode("\x80").status().code(), StatusCode::kInvalidArgument);
}

TEST(Tokenizer, DecodeRejectsOutOfRangeIds) {
  auto t = load("gpt-2");
  ASSERT_NE(t, nullptr);
  const std::vector<int32_t> ids{1, 50257};
  auto r = t->decode(ids);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  const std::vector<int32_t> neg{-1};
  EXPECT_FALSE(t->decode(neg).ok());
}

TEST(Tokenizer, ConcurrentEncodeMatchesSerial) {
  auto t = load("llama-spm");
  auto b = load("gpt-2");
  ASSERT_NE(t, nullptr);
  ASSERT_NE(b, nullptr);
  std::string inp;
  ASSERT_TRUE(testing::read_file(testing::data_dir() + "/ggml-vocab-gpt-2.gguf.inp", inp));
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size(); pos += 97) texts.push_back(inp.substr(pos, 200));
  texts.erase(std::remove_if(texts.begin(), texts.end(),
                             [](const std::string& s) { return !utf8_valid(s); }),
              texts.end());
  ASSERT_FALSE(texts.empty());
  std::vector<std::vector<int32_t>> want_spm;
  std::vector<std::vector<int32_t>> want_bpe;
  for (const auto& s : texts) {
    want_spm.push_back(*t->encode(s));
    want_bpe.push_back(*b->encode(s));
  }
  std::vector<int> mismatches(6, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 6; ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 5; ++rep) {
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t j = (i + static_cast<size_t>(k) * 7) % texts.size();
          auto r1 = t->encode(texts[j]);
          auto r2 = b->encode(texts[j]);
          if (!r1.ok() || *r1 != want_spm[j]) ++mismatches[k];
          if (!r2.ok() || *r2 != want_bpe[j]) ++mismatches[k];
          auto d = b->decode(want_bpe[j]);
          if (!d.ok()) ++mismatches[k];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int k = 0; k < 6; ++k) EXPECT_EQ(mismatches[k], 0) << "thread " << k;
}

}  // namespace
}  // namespace geniex::tokenizer
