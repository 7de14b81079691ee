// StreamDecoder property: for any id sequence, concat(feed...) + flush() == decode(ids), and
// no emission ends inside a UTF-8 character.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace geniex::tokenizer {
namespace {

struct StreamResult {
  std::string text;
  bool emissions_whole_chars = true;
};

StreamResult stream(const Tokenizer& t, const std::vector<int32_t>& ids, DecodeOptions o) {
  StreamDecoder d = t.stream_decoder(o);
  StreamResult r;
  for (int32_t id : ids) {
    auto piece = d.feed(id);
    EXPECT_TRUE(piece.ok());
    if (!piece.ok()) continue;
    if (utf8_incomplete_tail(*piece) != 0) r.emissions_whole_chars = false;
    r.text += *piece;
  }
  r.text += d.flush();
  return r;
}

// Random sequences mixing: arbitrary ids, encodings of multi-byte text (so byte tokens of one
// character are fed separately), the vocabulary's BOS/EOS, and space/punctuation pieces that
// exercise clean-up of spaces.
std::vector<int32_t> random_ids(const Tokenizer& t, std::mt19937& rng) {
  static const char* const kSnippets[] = {"é",   "🦙",  "中文",   " ?",  " '",
                                          "'s",  " 're",  " ,",     "ü",   "\xe2\x96\x81",
                                          " ' ", "Hello", " world", "𝔘𝔫𝔦", "'"};
  std::vector<int32_t> ids;
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_int_distribution<int32_t> any(0, t.n_vocab() - 1);
  std::uniform_int_distribution<size_t> snip(0, std::size(kSnippets) - 1);
  const int n = std::uniform_int_distribution<int>(0, 24)(rng);
  for (int i = 0; i < n; ++i) {
    const int k = kind(rng);
    if (k < 3) {
      ids.push_back(any(rng));
    } else if (k < 8) {
      auto enc = t.encode(kSnippets[snip(rng)], {.add_special = false});
      if (enc.ok()) ids.insert(ids.end(), enc->begin(), enc->end());
    } else if (k == 8 && t.bos() >= 0) {
      ids.push_back(t.bos());
    } else if (t.eos() >= 0) {
      ids.push_back(t.eos());
    }
  }
  return ids;
}

class StreamDecoderTest : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamDecoderTest, ConcatenationEqualsDecode) {
  std::string err;
  auto t = testing::load_vocab_file(GetParam(), &err);
  ASSERT_NE(t, nullptr) << err;
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 400; ++iter) {
    const auto ids = random_ids(*t, rng);
    for (int mode = 0; mode < 4; ++mode) {
      const DecodeOptions o{.remove_special = (mode & 1) != 0, .render_special = (mode & 2) != 0};
      auto want = t->decode(ids, o);
      ASSERT_TRUE(want.ok());
      const StreamResult got = stream(*t, ids, o);
      ASSERT_EQ(got.text, *want) << GetParam() << " iter " << iter << " mode " << mode;
      if (utf8_valid(*want)) {
        EXPECT_TRUE(got.emissions_whole_chars) << "iter " << iter;
      }
    }
  }
}

TEST_P(StreamDecoderTest, MultiByteCharacterSplitAcrossByteTokens) {
  std::string err;
  auto t = testing::load_vocab_file(GetParam(), &err);
  ASSERT_NE(t, nullptr) << err;
  const std::string text = "a🦙b中é";
  auto ids = t->encode(text, {.add_special = false});
  ASSERT_TRUE(ids.ok());
  StreamDecoder d = t->stream_decoder();
  std::string all;
  for (int32_t id : *ids) {
    auto piece = d.feed(id);
    ASSERT_TRUE(piece.ok());
    EXPECT_TRUE(utf8_valid(*piece)) << "partial character emitted";
    all += *piece;
  }
  all += d.flush();
  EXPECT_EQ(all, *t->decode(*ids));
}

TEST(StreamDecoder, RejectsBadIdAndKeepsState) {
  auto t = testing::load_vocab_file("gpt-2");
  ASSERT_NE(t, nullptr);
  StreamDecoder d = t->stream_decoder();
  auto hello = t->encode("Hello", {.add_special = false});
  ASSERT_TRUE(hello.ok());
  std::string out;
  for (int32_t id : *hello) out += *d.feed(id);
  EXPECT_FALSE(d.feed(-3).ok());
  EXPECT_FALSE(d.feed(t->n_vocab()).ok());
  out += d.flush();
  EXPECT_EQ(out, "Hello");
}

INSTANTIATE_TEST_SUITE_P(Vocabs, StreamDecoderTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder",
                                           "bert-bge"));

}  // namespace
}  // namespace geniex::tokenizer
