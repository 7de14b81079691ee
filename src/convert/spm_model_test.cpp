// Our SentencePiece model reader on the committed tiny Gemma 3 tokenizer.model (written by the
// sentencepiece package) and on broken bytes.
#include "convert/spm_model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace geniex::convert {
namespace {

std::vector<uint8_t> read_model() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  std::ifstream f(
      std::string(root != nullptr ? root : ".") + "/tests/data/hf/gemma3/tokenizer.model",
      std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(SpmModel, ReadsTheReferenceWritersFile) {
  const auto bytes = read_model();
  ASSERT_FALSE(bytes.empty());
  auto p = parse_spm_model(bytes);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 2048u);
  EXPECT_EQ((*p)[0].text, "<pad>");
  EXPECT_EQ((*p)[2].text, "<bos>");
  EXPECT_EQ((*p)[3].type, SpmType::kUnknown);
  EXPECT_EQ((*p)[1].type, SpmType::kControl);
  size_t bytes_pieces = 0;
  for (const SpmPiece& s : *p) bytes_pieces += s.type == SpmType::kByte ? 1 : 0;
  EXPECT_EQ(bytes_pieces, 256u);
}

TEST(SpmModel, BrokenInputIsAnError) {
  EXPECT_FALSE(parse_spm_model({}).ok());
  const std::vector<uint8_t> bad_wire = {0x0f};  // field 1, wire type 7
  EXPECT_FALSE(parse_spm_model(bad_wire).ok());
  const std::vector<uint8_t> long_len = {0x0a, 0x7f, 0x0a};  // piece longer than the input
  EXPECT_FALSE(parse_spm_model(long_len).ok());
  const std::vector<uint8_t> bad_type = {0x0a, 0x05, 0x0a, 0x01, 'a', 0x18, 0x09};
  const Status s = parse_spm_model(bad_type).status();
  EXPECT_NE(s.message().find("unknown piece type 9"), std::string::npos) << s.message();
  const auto bytes = read_model();
  for (size_t n = 0; n < bytes.size(); n += 97) {  // prefixes: parse or fail, never crash
    (void)parse_spm_model(std::span<const uint8_t>(bytes.data(), n));
  }
}

}  // namespace
}  // namespace geniex::convert
