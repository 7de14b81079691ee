// Public API of the Jinja interpreter: parse once, render many times (render is const and
// thread-safe). Errors come back as Status with the template line:column.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/value.h"

namespace geniex::jinja {

/// Lexer settings. The defaults are Hugging Face's: jinja2 Environment(trim_blocks=True,
/// lstrip_blocks=True), trailing newline of the source dropped.
struct ParseOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

class Template {
 public:
  /// Parses `source`. Syntax errors, unknown filters/tests and unclosed blocks return
  /// INVALID_ARGUMENT ("jinja syntax error at L:C: ..."); unsupported tags UNIMPLEMENTED.
  static Result<Template> parse(std::string_view source, const ParseOptions& opts = {});

  /// Renders with `context` (a dict Value) as the template's variables.
  /// raise_exception(msg) yields INVALID_ARGUMENT "raise_exception at L:C: msg"; exceeded
  /// limits RESOURCE_EXHAUSTED; undefined/type errors INVALID_ARGUMENT.
  [[nodiscard]] Result<std::string> render(const Value& context, const RenderEnv& env = {}) const;

 private:
  struct Impl;
  explicit Template(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

/// Converts an internal error into a Status (used by the module's entry points).
Status status_from_error(const JinjaError& e);

}  // namespace geniex::jinja
