// Tool calling for the chat endpoint: the request's `tools` / `tool_choice`, the model family's
// native tool-call format (found in its chat template), the prompt and constraint that make the
// model call a tool when it must, and the parser that turns the model's output back into
// OpenAI `tool_calls`.
//
// Formats: Hermes (<tool_call>{"name", "arguments"}</tool_call>: Qwen 2.5/3 and others),
// Llama 3.1+ JSON ({"name", "parameters"}), Mistral ([TOOL_CALLS][{"name", "arguments"}]),
// LFM2 (<|tool_call_start|>[f(a=1)]<|tool_call_end|>, Pythonic or JSON), and a generic JSON
// envelope for templates with none (Gemma 3): the tools are described in a system message, tool
// results become user messages, and the reply is constrained to {"tool_calls": [...]} or
// {"content": "..."} so that it always parses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "geniex/geniex.hpp"
#include "server/api_error.h"

namespace geniex::server {

enum class ToolFormat { kHermes, kLlama3, kMistral, kLfm2, kGeneric };

/// The format a chat template's source speaks (kGeneric: none we know).
ToolFormat detect_tool_format(std::string_view template_source);
std::string_view tool_format_name(ToolFormat f);

struct ToolDef {
  std::string name;
  std::string description;
  /// The JSON Schema of the arguments, as sent ({"type": "object"} when absent).
  Json parameters = Json::object();
};

struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;  ///< kNamed
};

/// A chat request's tool fields, validated.
struct ToolsRequest {
  Json tools = Json::array();  ///< as sent, for the chat template
  std::vector<ToolDef> defs;
  ToolChoice choice;
  bool parallel = true;  ///< parallel_tool_calls
  /// Tools are offered and may be called (tools given and tool_choice is not "none").
  [[nodiscard]] bool active() const {
    return !defs.empty() && choice.mode != ToolChoice::Mode::kNone;
  }
};

/// Reads `tools`, `tool_choice` and `parallel_tool_calls` of a chat body. Errors are
/// OpenAI-shaped 400s naming the field (a malformed tool, an unknown named function, a choice
/// that needs tools without any).
ApiResult<ToolsRequest> parse_tools_request(const Json& body);

/// How one chat request runs with tools.
struct ToolPlan {
  ToolFormat format = ToolFormat::kGeneric;
  std::vector<ChatMessage> messages;  ///< what the template renders (generic: rewritten)
  ChatTemplateOptions options;        ///< tools for the template, the reply prefix
  /// A JSON Schema the reply must satisfy ("" = free text, parsed afterwards).
  std::string schema;
  /// The reply is exactly the constrained JSON (no free text to stream).
  [[nodiscard]] bool constrained() const { return !schema.empty(); }
};

/// Plans a request whose tools are active(). `messages` are the request's (tool results and
/// assistant tool calls included).
ToolPlan plan_tools(ToolFormat format, const ToolsRequest& tools,
                    const std::vector<ChatMessage>& messages);

/// The model's reply, split into text and calls.
struct ParsedReply {
  std::string content;          ///< text outside the calls (may be empty)
  std::vector<ToolCall> calls;  ///< with fresh ids; arguments as compact JSON text
  /// Set when the reply started a tool call that does not parse (or names an unknown tool):
  /// no call is passed on and `content` holds the whole raw reply.
  std::string error;
};

/// Parses a finished reply of `plan` (the generated text, without the reply prefix).
ParsedReply parse_reply(const ToolPlan& plan, const ToolsRequest& tools, std::string_view text);

/// Streaming a free-text reply (plan not constrained): how much of `text` (the reply so far)
/// can be sent as content now, i.e. the bytes before anything that is or may become the start
/// of a tool call. Once a call has begun, nothing more is sent until the end.
size_t streamable_prefix(ToolFormat format, std::string_view text);

/// The generic envelope streams its answer: the decoded text of {"content": "..."} so far
/// (an escape cut in half is left for later), or nullopt while the reply is not (yet) known to
/// be that form.
std::optional<std::string> generic_content_prefix(std::string_view reply);

/// A tool call id: "call_" and 24 letters and digits; Mistral's templates want 9 of them.
std::string make_tool_call_id(ToolFormat format);

/// Converts a Python literal call list, "[f(a=1, b='x'), g()]", as LFM2 writes its calls, to
/// [{"name", "arguments"}]; nullopt when it is not one.
std::optional<Json> parse_pythonic_calls(std::string_view text);

}  // namespace geniex::server
