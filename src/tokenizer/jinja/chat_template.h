// Chat templates: render a model's `tokenizer.chat_template` the way Hugging Face's
// apply_chat_template does, plus built-in fallback templates by model family.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/jinja/template.h"

namespace geniex::jinja {

struct ChatTemplateInputs {
  /// [{role, content (string or list of parts), tool_calls, ...}]; key order is kept.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  /// Tool schemas; nullopt renders as `tools = none`, as transformers passes it.
  std::optional<nlohmann::ordered_json> tools;
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  /// More template variables (enable_thinking, date_string, ...); they override the above.
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();
  /// Local time strftime_now() reports; nullopt: the system clock.
  std::optional<std::tm> now;
  RenderLimits limits;
};

/// JSON -> template value (objects keep their key order).
Value json_to_value(const nlohmann::ordered_json& j);

/// The variables transformers passes to a chat template: messages, tools, documents,
/// add_generation_prompt, bos_token, eos_token, then extra_context.
Value chat_context(const ChatTemplateInputs& in);

/// Parses and renders in one go (parse errors and template errors both come back as Status).
Result<std::string> render_chat_template(std::string_view tmpl, const ChatTemplateInputs& in);
/// Renders an already parsed template (parse once, render many).
Result<std::string> render_chat_template(const Template& tmpl, const ChatTemplateInputs& in);

/// A simple built-in template for a model family, for models whose GGUF lacks one:
/// "gemma"/"gemma2"/"gemma3", "llama3"/"llama", "mistral", "qwen2"/"qwen3"/"qwen"/"chatml", "lfm2".
std::optional<std::string> builtin_chat_template(std::string_view family);

}  // namespace geniex::jinja
