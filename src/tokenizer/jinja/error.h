// Internal error type of the Jinja module. Thrown inside the module only; Template::parse and
// Template::render catch it and turn it into a Status, so no exception crosses the module boundary.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace geniex::jinja {

/// 1-based line and column in the template source; line 0 means unknown.
struct SourcePos {
  uint32_t line = 0;
  uint32_t col = 0;
};

enum class ErrorKind {
  kSyntax,      ///< the template text is malformed
  kUndefined,   ///< an undefined value was used where a value is required
  kType,        ///< an operation on values of the wrong type
  kRaised,      ///< raise_exception() was called by the template
  kLimit,       ///< a recursion, output, or iteration limit was exceeded
  kUnsupported  ///< a valid Jinja feature this interpreter does not implement
};

class JinjaError : public std::exception {
 public:
  JinjaError(ErrorKind kind, std::string message, SourcePos pos = {})
      : kind_(kind), message_(std::move(message)), pos_(pos) {}
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }
  [[nodiscard]] ErrorKind kind() const { return kind_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] SourcePos pos() const { return pos_; }
  void set_pos_if_unknown(SourcePos p) {
    if (pos_.line == 0) pos_ = p;
  }

 private:
  ErrorKind kind_;
  std::string message_;
  SourcePos pos_;
};

[[noreturn]] inline void fail(ErrorKind kind, std::string message, SourcePos pos = {}) {
  throw JinjaError(kind, std::move(message), pos);
}
[[noreturn]] inline void type_error(std::string message) {
  fail(ErrorKind::kType, std::move(message));
}

}  // namespace geniex::jinja
