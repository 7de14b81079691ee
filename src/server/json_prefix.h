// JsonPrefix: a byte-level recognizer of "a prefix of one JSON object" (RFC 8259, top-level
// object only, as OpenAI's response_format {"type": "json_object"} asks). The server feeds it
// each candidate token's text and keeps the first token whose text leaves a valid prefix, so
// the generated reply is always a prefix of valid JSON and, once complete(), valid JSON.
//
// Bytes >= 0x80 are accepted inside strings only, so a token that is part of a UTF-8 character
// is judged byte by byte. Whitespace between tokens is limited (kMaxWhitespaceRun) so that a
// model cannot stall the object with endless blank lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace geniex::server {

class JsonPrefix {
 public:
  /// Appends `text` if the result is still a valid prefix and returns true; else returns false
  /// and changes nothing. Nothing may follow a complete object (only end of generation).
  bool feed(std::string_view text);
  /// True when what was fed is one complete JSON object.
  [[nodiscard]] bool complete() const { return state_ == State::kDone; }

  static constexpr int kMaxWhitespaceRun = 8;
  static constexpr size_t kMaxDepth = 64;

 private:
  enum class State : uint8_t {
    kStart,         // before the top-level '{'
    kKeyOrEnd,      // after '{': '"' or '}'
    kKey,           // after ',' in an object: '"'
    kColon,         // after a key
    kValue,         // after ':' or ',' in an array
    kValueOrEnd,    // after '[': a value or ']'
    kAfterValue,    // ',' or the closing bracket
    kString,        // inside a string
    kEscape,        // after '\'
    kUnicode,       // in \uXXXX
    kNumMinus,      // after '-'
    kNumZero,       // integer part "0"
    kNumInt,        // integer part 1-9...
    kNumDot,        // after '.'
    kNumFrac,       // fraction digits
    kNumExp,        // after 'e'
    kNumExpSign,    // after 'e+' / 'e-'
    kNumExpDigits,  // exponent digits
    kLiteral,       // true / false / null
    kDone,
  };

  bool step(char c);
  bool value_start(char c);
  bool end_value(char c);  // c ends a number: continue as kAfterValue
  bool close(char c);      // '}' or ']'

  State state_ = State::kStart;
  std::string stack_;  // '{' / '['
  bool string_is_key_ = false;
  int hex_left_ = 0;
  std::string_view literal_rest_;  // what remains of true/false/null
  int ws_run_ = 0;
};

}  // namespace geniex::server
