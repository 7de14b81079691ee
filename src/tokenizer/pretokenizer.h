// BPE pre-tokenizers: the regex split applied to raw text before byte-level BPE, chosen by
// `tokenizer.ggml.pre`. Each regex of a set splits every piece produced by the previous one;
// both the matches and the text between them become pieces ("isolated" split).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/unicode.h"

namespace geniex::tokenizer {

/// Behaviour flags that a `pre` name implies besides its regexes.
struct PreTokenizerTraits {
  bool ignore_merges = false;  ///< emit a whole word directly when it is a vocab entry
  bool add_bos = false;        ///< the family adds BOS by default (GGUF may override)
  bool clean_spaces = true;    ///< apply clean_up_tokenization_spaces when decoding
};

class PreTokenizer {
 public:
  /// The regex set for `pre` (e.g. "llama-bpe", "qwen2", "gpt-2"); an empty name means
  /// "default". kInvalidArgument naming the key for an unknown name.
  static Result<PreTokenizer> create(std::string_view pre);

  /// Splits valid UTF-8 `text` into pieces (views into `text`, in order, covering all of it).
  Status split(std::string_view text, std::vector<std::string_view>& out) const;

  [[nodiscard]] const PreTokenizerTraits& traits() const { return traits_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  std::string name_;
  PreTokenizerTraits traits_;
  std::vector<std::shared_ptr<const Regex>> regexes_;
};

/// Every `pre` name this build understands (for messages and tests).
std::vector<std::string> known_pre_tokenizers();

}  // namespace geniex::tokenizer
