#include "server/json_prefix.h"

namespace geniex::server {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

bool JsonPrefix::feed(std::string_view text) {
  JsonPrefix copy = *this;
  for (const char c : text) {
    if (!copy.step(c)) return false;
  }
  *this = std::move(copy);
  return true;
}

bool JsonPrefix::value_start(char c) {
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= kMaxDepth) return false;
      stack_ += c;
      state_ = c == '{' ? State::kKeyOrEnd : State::kValueOrEnd;
      return true;
    case '"':
      string_is_key_ = false;
      state_ = State::kString;
      return true;
    case '-': state_ = State::kNumMinus; return true;
    case '0': state_ = State::kNumZero; return true;
    case 't':
      literal_rest_ = "rue";
      state_ = State::kLiteral;
      return true;
    case 'f':
      literal_rest_ = "alse";
      state_ = State::kLiteral;
      return true;
    case 'n':
      literal_rest_ = "ull";
      state_ = State::kLiteral;
      return true;
    default:
      if (c >= '1' && c <= '9') {
        state_ = State::kNumInt;
        return true;
      }
      return false;
  }
}

bool JsonPrefix::close(char c) {
  if (stack_.empty() || (c == '}') != (stack_.back() == '{')) return false;
  stack_.pop_back();
  state_ = stack_.empty() ? State::kDone : State::kAfterValue;
  return true;
}

bool JsonPrefix::end_value(char c) {
  state_ = State::kAfterValue;
  return step(c);
}

bool JsonPrefix::step(char c) {
  const bool in_string =
      state_ == State::kString || state_ == State::kEscape || state_ == State::kUnicode;
  if (!in_string && is_ws(c)) {
    // Whitespace between tokens; not inside numbers or literals (it would end them: a number
    // may end there, a literal may not).
    if (state_ == State::kStart || state_ == State::kDone || state_ == State::kLiteral ||
        state_ == State::kNumMinus || state_ == State::kNumDot || state_ == State::kNumExp ||
        state_ == State::kNumExpSign) {
      return false;
    }
    if (++ws_run_ > kMaxWhitespaceRun) return false;
    if (state_ == State::kNumZero || state_ == State::kNumInt || state_ == State::kNumFrac ||
        state_ == State::kNumExpDigits) {
      state_ = State::kAfterValue;
    }
    return true;
  }
  ws_run_ = 0;
  switch (state_) {
    case State::kStart:
      if (c != '{') return false;
      stack_ += '{';
      state_ = State::kKeyOrEnd;
      return true;
    case State::kKeyOrEnd:
      if (c == '}') return close(c);
      [[fallthrough]];
    case State::kKey:
      if (c != '"') return false;
      string_is_key_ = true;
      state_ = State::kString;
      return true;
    case State::kColon:
      if (c != ':') return false;
      state_ = State::kValue;
      return true;
    case State::kValueOrEnd:
      if (c == ']') return close(c);
      [[fallthrough]];
    case State::kValue: return value_start(c);
    case State::kAfterValue:
      if (c == '}' || c == ']') return close(c);
      if (c != ',') return false;
      state_ = stack_.back() == '{' ? State::kKey : State::kValue;
      return true;
    case State::kString:
      if (c == '"') {
        state_ = string_is_key_ ? State::kColon : State::kAfterValue;
        return true;
      }
      if (c == '\\') {
        state_ = State::kEscape;
        return true;
      }
      return static_cast<unsigned char>(c) >= 0x20;  // control characters must be escaped
    case State::kEscape:
      if (c == 'u') {
        hex_left_ = 4;
        state_ = State::kUnicode;
        return true;
      }
      if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
          c == 't') {
        state_ = State::kString;
        return true;
      }
      return false;
    case State::kUnicode:
      if (!is_hex(c)) return false;
      if (--hex_left_ == 0) state_ = State::kString;
      return true;
    case State::kNumMinus:
      if (c == '0') {
        state_ = State::kNumZero;
        return true;
      }
      if (c >= '1' && c <= '9') {
        state_ = State::kNumInt;
        return true;
      }
      return false;
    case State::kNumZero:
    case State::kNumInt:
      if (state_ == State::kNumInt && is_digit(c)) return true;
      if (c == '.') {
        state_ = State::kNumDot;
        return true;
      }
      if (c == 'e' || c == 'E') {
        state_ = State::kNumExp;
        return true;
      }
      return end_value(c);
    case State::kNumDot:
      if (!is_digit(c)) return false;
      state_ = State::kNumFrac;
      return true;
    case State::kNumFrac:
      if (is_digit(c)) return true;
      if (c == 'e' || c == 'E') {
        state_ = State::kNumExp;
        return true;
      }
      return end_value(c);
    case State::kNumExp:
      if (c == '+' || c == '-') {
        state_ = State::kNumExpSign;
        return true;
      }
      [[fallthrough]];
    case State::kNumExpSign:
      if (!is_digit(c)) return false;
      state_ = State::kNumExpDigits;
      return true;
    case State::kNumExpDigits:
      if (is_digit(c)) return true;
      return end_value(c);
    case State::kLiteral:
      if (literal_rest_.empty() || c != literal_rest_.front()) return false;
      literal_rest_.remove_prefix(1);
      if (literal_rest_.empty()) state_ = State::kAfterValue;
      return true;
    case State::kDone: return false;
  }
  return false;
}

}  // namespace geniex::server
