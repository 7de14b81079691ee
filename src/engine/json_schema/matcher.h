// Matcher: a byte-level recognizer of "a prefix of one JSON value that satisfies a compiled
// Schema" (schema.h), for constrained sampling: the engine feeds it each candidate token's text
// and keeps the first token whose text leaves a valid prefix, so the output always parses and
// validates once complete().
//
// It runs the schema as a set of pushdown configurations (a stack of frames each: the value,
// object, array, string, number or literal being read), forked where the text cannot yet tell
// alternatives apart (anyOf, optional properties, enum values that are prefixes of others) and
// pruned when a byte rules one out. Whitespace between tokens is one space or one newline and
// at most kMaxIndent spaces or tabs, so that a model cannot stall with endless blank lines; numbers
// are limited to kMaxNumberChars and a number's integer part is refused as soon as no completion
// can meet its bounds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json_schema/schema.h"

namespace geniex::engine::json_schema {

namespace detail {
enum class FrameKind : uint8_t { kValue, kObject, kArray, kString, kNumber, kLiteral };

// Object phases: after '{'; inside a declared key; after a key (':' next); after a value (',' or
// '}'); after ',' (a key next).
enum class ObjPhase : uint8_t { kOpen, kKeyChars, kColon, kAfterValue, kNeedKey };
// Array phases: after '['; after a value; after ','.
enum class ArrPhase : uint8_t { kOpen, kAfterValue, kNeedValue };
// Number phases, as RFC 8259's grammar (exponents of at most two digits).
enum class NumPhase : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };

struct Frame {
  FrameKind kind = FrameKind::kValue;
  int32_t node = -1;  // -1: any value
  // kObject
  ObjPhase obj = ObjPhase::kOpen;
  int32_t next_prop = 0;
  int32_t value_node = -1;
  bool open_keys = false;  // any string key (values: value_node, -1: any value)
  bool no_keys = false;    // open_keys without additionalProperties: "{}" only
  std::string key;         // kKeyChars: the key's bytes so far
  // kArray
  ArrPhase arr = ArrPhase::kOpen;
  int64_t count = 0;
  // kString
  int64_t len = 0;        // characters
  int esc = 0;            // 0: none, 1: after '\', 2..5: hex digits left + 1
  uint16_t code = 0;      // the \u escape's value so far
  bool low_next = false;  // a high surrogate was escaped: a \u low surrogate must follow
  int utf8_left = 0;      // continuation bytes the current UTF-8 character still needs
  uint8_t utf8_lo = 0x80, utf8_hi = 0xBF;  // the range of the next continuation byte
  bool is_key = false;
  std::string text;  // kString with formats: the content; kNumber: the number
  // kNumber
  NumPhase num = NumPhase::kMinus;
  // kLiteral: candidates still alive and the bytes matched
  std::vector<std::string> lits;
  size_t pos = 0;
};

struct Config {
  std::vector<Frame> stack;
  int ws = 0;
  bool done = false;  // the top-level value is complete
};

}  // namespace detail

class Matcher {
 public:
  /// `schema` must outlive the matcher.
  explicit Matcher(const Schema& schema);

  /// Appends `text` if the result is still a valid prefix and returns true; else returns false
  /// and changes nothing. Nothing may follow a complete value (only end of generation).
  bool feed(std::string_view text);
  /// True when what was fed is one complete value that satisfies the schema.
  [[nodiscard]] bool complete() const;

  static constexpr int kMaxIndent = 20;
  static constexpr size_t kMaxDepth = 64;
  static constexpr size_t kMaxConfigs = 32;
  static constexpr size_t kMaxNumberChars = 24;

  using Frame = detail::Frame;
  using Config = detail::Config;

 private:
  const Schema* schema_;
  std::vector<Config> configs_;
};

}  // namespace geniex::engine::json_schema
