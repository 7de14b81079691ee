// Serialization of OpenAI responses: chat.completion, chat.completion.chunk, text_completion
// (whole and streamed), usage, logprobs, and Server-Sent Events framing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "geniex/geniex.hpp"
#include "server/api_error.h"
#include "server/request.h"

namespace geniex::server {

/// What every object of one response shares.
struct ResponseMeta {
  std::string id;       ///< "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  ///< unix seconds
  std::string model;
};

/// One generated token for logprobs output: its text (raw bytes, possibly a partial UTF-8
/// sequence) and log-probability, and the alternatives.
struct TokenText {
  std::string text;
  float logprob = 0.0f;
};
struct LogprobEntry {
  TokenText chosen;
  std::vector<TokenText> top;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

/// "stop" (end of generation or a stop string) or "length" (max_tokens or the context).
std::string_view finish_reason(StopReason r);

/// A fresh id with the given prefix and 24 random hex digits.
std::string make_id(std::string_view prefix);

Json usage_json(const Usage& u);

/// Chat logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}],
/// "refusal": null}. -inf log-probabilities are written as -9999 (JSON has no infinity).
Json chat_logprobs_json(const std::vector<LogprobEntry>& entries);
/// Completions logprobs: {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
/// text_offset counts bytes from `offset0`.
Json completion_logprobs_json(const std::vector<LogprobEntry>& entries, size_t offset0);

/// The whole response of a non-streamed request.
Json chat_completion_json(const ResponseMeta& meta, const std::string& text,
                          std::string_view finish, const Usage& usage,
                          const std::optional<std::vector<LogprobEntry>>& logprobs);
/// A chat reply with tool calls: content null when empty, message.tool_calls with each call's
/// arguments as JSON text. finish should be "tool_calls" when there are calls.
Json chat_tool_completion_json(const ResponseMeta& meta, const std::string& content,
                               const std::vector<ToolCall>& calls, std::string_view finish,
                               const Usage& usage);
/// Streamed tool calls: the delta entries of call `index` ({"index", "id", "type",
/// "function": {"name", "arguments"}}).
Json tool_call_delta_json(size_t index, const ToolCall& call);
Json text_completion_json(const ResponseMeta& meta, const std::string& text,
                          std::string_view finish, const Usage& usage,
                          const std::optional<std::vector<LogprobEntry>>& logprobs);

/// One streamed chunk. Chat: `role` (first chunk) and/or `content` in the delta; completions:
/// `content` is the text. `finish` set on the last choice-bearing chunk. With include_usage,
/// every chunk carries "usage": null.
struct ChunkParts {
  bool role = false;
  std::optional<std::string> content;
  std::optional<std::string_view> finish;
  std::optional<std::vector<LogprobEntry>> logprobs;
  size_t text_offset = 0;          ///< completions: byte offset of `content` in the whole text
  std::optional<Json> tool_calls;  ///< chat: the delta's tool_calls array
};
Json stream_chunk_json(Endpoint endpoint, const ResponseMeta& meta, const ChunkParts& parts,
                       bool include_usage);
/// The final usage chunk of stream_options.include_usage: "choices": [] and the usage.
Json usage_chunk_json(Endpoint endpoint, const ResponseMeta& meta, const Usage& usage);

/// "data: <json>\n\n" (invalid UTF-8 replaced by U+FFFD).
std::string sse_event(const Json& j);
/// "data: [DONE]\n\n".
std::string sse_done();

/// A request's default settings as GET /props reports them (llama-server's
/// "default_generation_settings" with geniex serve's flag names): max_tokens (-1 = no server
/// default), temperature, top_k, top_p, min_p, repeat_penalty, presence_penalty,
/// frequency_penalty, repeat_last_n, seed (-1 = random per request), stop, ignore_eos. Floats are
/// rounded to 6 significant digits (0.8, not 0.800000011920929).
Json generation_settings_json(const GenerationConfig& c);

/// JSON text with invalid UTF-8 replaced (model text may contain partial sequences).
std::string dump(const Json& j);

}  // namespace geniex::server
