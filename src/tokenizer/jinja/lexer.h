// Lexer: template text -> tokens, applying Jinja's whitespace control
// ({%- -%}, {%+, trim_blocks, lstrip_blocks) exactly as jinja2's lexer does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/error.h"

namespace geniex::jinja {

struct LexOptions {
  bool trim_blocks = true;    ///< drop the first newline after a block or comment tag
  bool lstrip_blocks = true;  ///< drop spaces/tabs before a block or comment tag on its line
  bool keep_trailing_newline = false;
};

enum class TokType {
  kText,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof
};

struct Token {
  TokType type;
  std::string value;  ///< text, name, decoded string literal, number spelling, or operator
  size_t offset = 0;  ///< byte offset in the normalized source
};

/// Maps byte offsets of the normalized source to line:column.
class LineMap {
 public:
  explicit LineMap(std::string_view src);
  [[nodiscard]] SourcePos pos(size_t offset) const;

 private:
  std::vector<size_t> starts_;
};

/// Normalizes newlines (\r\n, \r -> \n) and drops one trailing newline unless kept.
std::string normalize_source(std::string_view src, const LexOptions& opts);

/// Tokenizes normalized source; throws JinjaError(kSyntax) with a position on malformed input.
std::vector<Token> tokenize(std::string_view src, const LexOptions& opts, const LineMap& lines);

}  // namespace geniex::jinja
