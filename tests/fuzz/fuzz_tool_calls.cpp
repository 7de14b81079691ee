// Fuzzes the parsers of a model's tool-call output (every family's format, free and
// constrained, the streaming hold-back and the generic envelope's incremental decoder) with
// arbitrary replies: no crash, throw or hang; a call passed on always has a known tool's name and
// a JSON object as arguments; a broken call passes nothing on and keeps the whole text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/response.h"
#include "server/tool_calls.h"

namespace gs = geniex::server;

namespace {

const gs::ToolsRequest& tools(bool required) {
  static const auto make = [](const char* choice) {
    const gs::Json body = gs::Json::parse(std::string(R"({"tools": [
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "search"}}], "tool_choice": ")") +
                                          choice + "\"}");
    return std::get<gs::ToolsRequest>(gs::parse_tools_request(body));
  };
  static const gs::ToolsRequest kAuto = make("auto"), kRequired = make("required");
  return required ? kRequired : kAuto;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<geniex::ChatMessage> msgs = {{"user", "x"}};
  for (const auto f : {gs::ToolFormat::kHermes, gs::ToolFormat::kLlama3, gs::ToolFormat::kMistral,
                       gs::ToolFormat::kLfm2, gs::ToolFormat::kGeneric}) {
    for (const bool required : {false, true}) {
      const gs::ToolsRequest& tr = tools(required);
      const gs::ToolPlan plan = gs::plan_tools(f, tr, msgs);
      const gs::ParsedReply r = gs::parse_reply(plan, tr, text);
      if (!r.error.empty() && (!r.calls.empty() || r.content != text)) __builtin_trap();
      for (const auto& c : r.calls) {
        if (c.name != "get_weather" && c.name != "search") __builtin_trap();
        const gs::Json args = gs::Json::parse(c.arguments, nullptr, false);
        if (args.is_discarded() || !args.is_object()) __builtin_trap();
      }
      (void)gs::dump(
          gs::chat_tool_completion_json({"id", 0, "m"}, r.content, r.calls, "tool_calls", {1, 1}));
    }
    if (gs::streamable_prefix(f, text) > text.size()) __builtin_trap();
  }
  if (auto c = gs::generic_content_prefix(text); c && c->size() > text.size() * 4) {
    __builtin_trap();
  }
  (void)gs::parse_pythonic_calls(text);
  return 0;
}
