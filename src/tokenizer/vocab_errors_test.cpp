// Vocabulary validation: malformed tokenizer.* metadata gives a Status naming the key; a tiny
// hand-built BPE vocabulary works end to end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace geniex::tokenizer {
namespace {

using gguf::GgufWriter;
using gguf::Value;
using gguf::ValueType;

// 256 byte-level characters + "ab" + "abc"; merges "a b", "ab c".
std::vector<std::string> tiny_tokens() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_unicode(static_cast<uint8_t>(b)));
    t.push_back(s);
  }
  t.push_back("ab");
  t.push_back("abc");
  t.push_back("<|end|>");
  return t;
}

GgufWriter tiny_bpe() {
  GgufWriter w;
  w.set("general.architecture", Value::of_string("llama"));
  w.set("tokenizer.ggml.model", Value::of_string("gpt2"));
  w.set("tokenizer.ggml.pre", Value::of_string("gpt-2"));
  auto toks = tiny_tokens();
  std::vector<int64_t> types(toks.size(), 1);
  types.back() = 3;
  w.set("tokenizer.ggml.tokens", Value::of_string_array(toks));
  w.set("tokenizer.ggml.token_type", Value::of_int_array(ValueType::kInt32, types));
  w.set("tokenizer.ggml.merges", Value::of_string_array({"a b", "ab c"}));
  w.set("tokenizer.ggml.eos_token_id", Value::of_uint(ValueType::kUint32, 258));
  return w;
}

Result<std::shared_ptr<const Tokenizer>> build(const GgufWriter& w) {
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return bytes.status();
  // GgufFile::parse borrows the buffer; the tokenizer copies what it needs.
  auto file = gguf::GgufFile::parse(*bytes, "test.gguf");
  if (!file.ok()) return file.status();
  return Tokenizer::from_gguf(*file);
}

void expect_error(const GgufWriter& w, std::string_view key) {
  auto t = build(w);
  ASSERT_FALSE(t.ok()) << "expected an error naming " << key;
  EXPECT_NE(t.status().message().find(key), std::string::npos) << t.status().to_string();
}

TEST(VocabErrors, TinyBpeWorks) {
  auto t = build(tiny_bpe());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto ids = (*t)->encode("abc ab", {.add_special = false});
  ASSERT_TRUE(ids.ok());
  // "abc" merges fully; " ab" is "Ġ" + "ab".
  const auto space = (*t)->find_token("Ġ");
  ASSERT_TRUE(space.has_value());
  EXPECT_EQ(*ids, (std::vector<int32_t>{257, *space, 256}));
  EXPECT_EQ(*(*t)->decode(*ids), "abc ab");
  EXPECT_TRUE((*t)->is_eog(258));
}

TEST(VocabErrors, MissingModel) {
  GgufWriter w;
  w.set("tokenizer.ggml.tokens", Value::of_string_array({"a"}));
  expect_error(w, "tokenizer.ggml.model");
}

TEST(VocabErrors, UnknownModelAndPre) {
  auto w = tiny_bpe();
  w.set("tokenizer.ggml.model", Value::of_string("sentencepiece-v9"));
  expect_error(w, "tokenizer.ggml.model");
  auto w2 = tiny_bpe();
  w2.set("tokenizer.ggml.pre", Value::of_string("no-such-pre"));
  expect_error(w2, "tokenizer.ggml.pre");
}

TEST(VocabErrors, MissingOrEmptyTokens) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", Value::of_string("llama"));
  expect_error(w, "tokenizer.ggml.tokens");
  w.set("tokenizer.ggml.tokens", Value::of_string_array({}));
  expect_error(w, "tokenizer.ggml.tokens");
}

TEST(VocabErrors, InconsistentArrayLengths) {
  auto w = tiny_bpe();
  w.set("tokenizer.ggml.scores", Value::of_float_array(ValueType::kFloat32, {0.0, 1.0}));
  expect_error(w, "tokenizer.ggml.scores");
  auto w2 = tiny_bpe();
  w2.set("tokenizer.ggml.token_type", Value::of_int_array(ValueType::kInt32, {1, 1, 1}));
  expect_error(w2, "tokenizer.ggml.token_type");
  auto w3 = tiny_bpe();
  std::vector<int64_t> types(tiny_tokens().size(), 1);
  types[5] = 42;
  w3.set("tokenizer.ggml.token_type", Value::of_int_array(ValueType::kInt32, types));
  expect_error(w3, "tokenizer.ggml.token_type[5]");
}

TEST(VocabErrors, SpecialIdOutOfRange) {
  auto w = tiny_bpe();
  w.set("tokenizer.ggml.bos_token_id", Value::of_uint(ValueType::kUint32, 100000));
  expect_error(w, "tokenizer.ggml.bos_token_id");
  auto w2 = tiny_bpe();
  w2.set("tokenizer.ggml.eos_token_id", Value::of_uint(ValueType::kUint32, 259));
  expect_error(w2, "tokenizer.ggml.eos_token_id");
  // Auxiliary ids out of range are ignored, as llama.cpp does.
  auto w3 = tiny_bpe();
  w3.set("tokenizer.ggml.padding_token_id", Value::of_uint(ValueType::kUint32, 999999));
  EXPECT_TRUE(build(w3).ok());
}

TEST(VocabErrors, WrongTypes) {
  auto w = tiny_bpe();
  w.set("tokenizer.ggml.bos_token_id", Value::of_string("one"));
  expect_error(w, "tokenizer.ggml.bos_token_id");
  auto w2 = tiny_bpe();
  w2.set("tokenizer.ggml.tokens", Value::of_uint(ValueType::kUint32, 3));
  expect_error(w2, "tokenizer.ggml.tokens");
  auto w3 = tiny_bpe();
  w3.set("tokenizer.ggml.add_bos_token", Value::of_uint(ValueType::kUint32, 1));
  expect_error(w3, "tokenizer.ggml.add_bos_token");
}

TEST(VocabErrors, BpeMerges) {
  auto w = tiny_bpe();
  w.set("tokenizer.ggml.merges", Value::of_string_array({"a b", "nospace"}));
  expect_error(w, "tokenizer.ggml.merges[1]");
  GgufWriter w2;
  w2.set("tokenizer.ggml.model", Value::of_string("gpt2"));
  w2.set("tokenizer.ggml.tokens", Value::of_string_array(tiny_tokens()));
  expect_error(w2, "tokenizer.ggml.merges");
}

TEST(VocabErrors, AddBosWithoutBos) {
  GgufWriter w;  // SPM adds BOS by default; its default id 1 does not exist in a 1-token vocab
  w.set("tokenizer.ggml.model", Value::of_string("llama"));
  w.set("tokenizer.ggml.tokens", Value::of_string_array({"a"}));
  expect_error(w, "add_bos");
  w.set("tokenizer.ggml.add_bos_token", Value::of_bool(false));
  auto t = build(w);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto ids = (*t)->encode("a b", {.add_special = true});
  ASSERT_TRUE(ids.ok());  // unknown characters without byte tokens fall back to <unk> (id 0)
  EXPECT_EQ(ids->front(), 0);
}

}  // namespace
}  // namespace geniex::tokenizer
