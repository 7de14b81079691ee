// llama.cpp's test-tokenizer-0 vectors: for every ggml-vocab-<name>.gguf in tests/data/tokenizer
// with .inp/.out files, every case must encode (add_special = false, parse_special = false)
// to exactly the ids on the matching .out line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace geniex::tokenizer {
namespace {

using testing::data_dir;
using testing::read_file;

// The harness's case split: text up to each "\n__ggml_vocab_test__\n"; any rest is a last case.
std::vector<std::string> split_cases(const std::string& inp) {
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (true) {
    const size_t next = inp.find(kSep, pos);
    if (next == std::string::npos) {
      if (pos < inp.size()) cases.push_back(inp.substr(pos));
      break;
    }
    cases.push_back(inp.substr(pos, next - pos));
    pos = next + kSep.size();
  }
  return cases;
}

std::vector<std::vector<int32_t>> parse_out(const std::string& out) {
  std::vector<std::vector<int32_t>> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    long long id = 0;
    while (ls >> id) ids.push_back(static_cast<int32_t>(id));
    lines.push_back(std::move(ids));
  }
  return lines;
}

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

// Every set whose vocab is checked in; all must be present.
// llama-bpe and qwen2 vocabs are built from public tokenizer.json files by
// scripts/goldens/hf_tokenizer_to_gguf.py (see tests/data/tokenizer/SOURCES-bpe.md).
const char* const kSets[] = {"llama-spm",      "phi-3",    "gpt-2",     "deepseek-llm",
                             "deepseek-coder", "falcon",   "mpt",       "starcoder",
                             "refact",         "bert-bge", "llama-bpe", "qwen2"};

TEST(VocabVectors, AllSetsMatchLlamaCpp) {
  std::string summary;
  bool all_ok = true;
  for (const char* name : kSets) {
    SCOPED_TRACE(name);
    const std::string base = data_dir() + "/ggml-vocab-" + name + ".gguf";
    std::string inp;
    std::string out;
    ASSERT_TRUE(read_file(base + ".inp", inp)) << "missing " << base << ".inp";
    ASSERT_TRUE(read_file(base + ".out", out)) << "missing " << base << ".out";
    std::string err;
    auto tok = testing::load_vocab_file(name, &err);
    ASSERT_NE(tok, nullptr) << err;
    const auto cases = split_cases(inp);
    const auto expected = parse_out(out);
    ASSERT_EQ(cases.size(), expected.size()) << "case/line count mismatch";
    size_t pass = 0;
    size_t skipped = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
#if !GENIEX_TOKENIZER_HAVE_ICU
      // Without ICU there is no NFD, so BERT cannot strip accents from non-ASCII text.
      if (tok->type() == VocabType::kWpm &&
          std::any_of(cases[i].begin(), cases[i].end(), [](char c) { return (c & 0x80) != 0; })) {
        ++skipped;
        continue;
      }
#endif
      auto ids = tok->encode(cases[i], {.add_special = false, .parse_special = false});
      ASSERT_TRUE(ids.ok()) << ids.status().to_string();
      if (*ids == expected[i]) {
        ++pass;
      } else {
        ADD_FAILURE() << name << " case " << i << " '" << cases[i]
                      << "'\n  expected:" << ids_str(expected[i])
                      << "\n  got:     " << ids_str(*ids);
      }
    }
    summary += std::string(name) + " " + std::to_string(pass) + "/" +
               std::to_string(cases.size() - skipped) +
               (skipped > 0 ? " (" + std::to_string(skipped) + " skipped: no ICU)" : "") + "; ";
    if (pass + skipped != cases.size()) all_ok = false;
  }
  EXPECT_TRUE(all_ok) << "per-set pass counts: " << summary;
  std::printf("per-set pass counts: %s\n", summary.c_str());
}

}  // namespace
}  // namespace geniex::tokenizer
