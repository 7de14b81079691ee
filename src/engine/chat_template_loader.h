// Parses a model's chat template once, when the model loads, and proves it renders a sample
// conversation inside the interpreter's limits, so a hostile template in a downloaded file fails
// the load with a clear message instead of every chat request.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/jinja/template.h"

namespace geniex::engine {

struct LoadedChatTemplate {
  /// The parsed template; nullopt when it does not parse (see error).
  std::optional<jinja::Template> parsed;
  /// Why it does not parse (a syntax error, an unsupported tag): chat requests fail with it,
  /// raw generation still works.
  Status error;
};

/// Parses `text`. A template that exceeds a limit (nesting, work, memory, steps), at parse or
/// while rendering a short sample conversation with `bos`/`eos`, is an error
/// (RESOURCE_EXHAUSTED naming the limit); other parse errors are kept in LoadedChatTemplate.
Result<LoadedChatTemplate> load_chat_template(std::string_view text, const std::string& bos,
                                              const std::string& eos);

}  // namespace geniex::engine
