// TokenTexts: the text of single tokens as the model's detokenizer writes them (raw bytes; a
// byte-fallback token may be part of a UTF-8 character), for logprobs output and for judging
// candidate tokens in JSON mode. The whole-vocabulary table is built once, on first need.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex::server {

class TokenTexts {
 public:
  explicit TokenTexts(const Model& model) : model_(model) {}

  /// The text of one token ("" for control tokens and ids outside the vocabulary).
  [[nodiscard]] std::string text(int32_t token) const;

  /// Every token's text, indexed by id (built on the first call; thread-safe).
  const std::vector<std::string>& table();

 private:
  const Model& model_;
  std::once_flag once_;
  std::vector<std::string> table_;
};

}  // namespace geniex::server
