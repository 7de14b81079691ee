// Internal: the encoding algorithms behind Tokenizer (one file each) and shared helpers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace geniex::tokenizer::detail {

/// SPM: merges adjacent symbols of `text` (spaces already written as U+2581) by descending
/// token score; unknown characters fall back to <0xNN> byte tokens.
void spm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out);

/// Byte-level BPE of one pre-tokenized word (raw UTF-8; mapped through the GPT-2 byte table
/// here), by ascending merge rank.
void bpe_encode_word(const Vocab& v, std::string_view word, std::vector<int32_t>& out);

/// BERT-style normalization + WordPiece (greedy longest match, "▁"-prefixed word starts).
class WpmEncoder {
 public:
  static Result<WpmEncoder> create(const Vocab& v);
  Status encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) const;

 private:
  std::shared_ptr<const Regex> drop_;   // characters removed before splitting
  std::shared_ptr<const Regex> lower_;  // any run of characters (for \L lowercasing)
  std::shared_ptr<const Regex> words_;  // words and isolated punctuation / CJK characters
};

/// One piece of text after special-token partitioning: raw text [off, off+len) of the input,
/// or a token id.
struct Fragment {
  int32_t token = kNoToken;  ///< kNoToken: raw text
  size_t off = 0;
  size_t len = 0;
};

/// Finds which special-token candidates occur in a text (a byte trie over their texts).
class SpecialMatcher {
 public:
  explicit SpecialMatcher(const Vocab& v);
  /// Marks in `present` (indexed like v.special_candidates) the candidates found in `text`.
  void find_present(std::string_view text, std::vector<char>& present) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    std::vector<int32_t> ends;                      // candidate indexes ending here
  };
  std::vector<Node> nodes_;  // nodes_[0] is the root
  size_t n_cand_ = 0;
  std::vector<int32_t> root_next_ = std::vector<int32_t>(256, -1);
};

/// Splits `text` at occurrences of special tokens, longest candidate first. Without
/// `parse_special`, CONTROL and UNKNOWN tokens are left as text (USER_DEFINED still split).
void partition_special(const Vocab& v, const SpecialMatcher& m, std::string_view text,
                       bool parse_special, std::vector<Fragment>& out);

/// llama.cpp's clean_up_tokenization_spaces, applied in place.
void clean_up_spaces(std::string& s);

}  // namespace geniex::tokenizer::detail
