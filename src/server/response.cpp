#include "server/response.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

// Strings may hold invalid UTF-8 (a token can be part of a character): every dump here uses
// error_handler_t::replace, which writes U+FFFD for such bytes.

namespace geniex::server {
namespace {

std::string_view object_name(Endpoint e, bool chunk) {
  if (e == Endpoint::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

Json meta_json(Endpoint e, const ResponseMeta& meta, bool chunk) {
  Json j;
  j["id"] = meta.id;
  j["object"] = object_name(e, chunk);
  j["created"] = meta.created;
  j["model"] = meta.model;
  return j;
}

/// JSON has no infinity; OpenAI reports impossible tokens as -9999.
double finite_logprob(float lp) { return std::isfinite(lp) ? lp : -9999.0; }

Json bytes_json(const std::string& s) {
  Json b = Json::array();
  for (const char c : s) b.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return b;
}

Json token_json(const TokenText& t) {
  Json j;
  j["token"] = t.text;
  j["logprob"] = finite_logprob(t.logprob);
  j["bytes"] = bytes_json(t.text);
  return j;
}

}  // namespace

std::string_view finish_reason(StopReason r) {
  switch (r) {
    case StopReason::kEndOfGeneration:
    case StopReason::kStopString:
    case StopReason::kCancelled: return "stop";
    case StopReason::kMaxTokens:
    case StopReason::kContextFull: return "length";
  }
  return "stop";
}

std::string make_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id += kHex[rng() & 15];
  return id;
}

Json usage_json(const Usage& u) {
  Json j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  return j;
}

Json chat_logprobs_json(const std::vector<LogprobEntry>& entries) {
  Json content = Json::array();
  for (const auto& e : entries) {
    Json t = token_json(e.chosen);
    Json top = Json::array();
    for (const auto& alt : e.top) top.push_back(token_json(alt));
    t["top_logprobs"] = std::move(top);
    content.push_back(std::move(t));
  }
  Json j;
  j["content"] = std::move(content);
  j["refusal"] = nullptr;
  return j;
}

Json completion_logprobs_json(const std::vector<LogprobEntry>& entries, size_t offset0) {
  Json tokens = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  size_t offset = offset0;
  for (const auto& e : entries) {
    tokens.push_back(e.chosen.text);
    lps.push_back(finite_logprob(e.chosen.logprob));
    Json top = Json::object();
    for (const auto& alt : e.top) top[alt.text] = finite_logprob(alt.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += e.chosen.text.size();
  }
  Json j;
  j["tokens"] = std::move(tokens);
  j["token_logprobs"] = std::move(lps);
  j["top_logprobs"] = std::move(tops);
  j["text_offset"] = std::move(offsets);
  return j;
}

Json chat_completion_json(const ResponseMeta& meta, const std::string& text,
                          std::string_view finish, const Usage& usage,
                          const std::optional<std::vector<LogprobEntry>>& logprobs) {
  Json j = meta_json(Endpoint::kChat, meta, false);
  Json msg;
  msg["role"] = "assistant";
  msg["content"] = text;
  msg["refusal"] = nullptr;
  Json choice;
  choice["index"] = 0;
  choice["message"] = std::move(msg);
  choice["logprobs"] = logprobs ? chat_logprobs_json(*logprobs) : Json(nullptr);
  choice["finish_reason"] = finish;
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(usage);
  return j;
}

Json tool_call_delta_json(size_t index, const ToolCall& call) {
  Json fn = {{"name", call.name}, {"arguments", call.arguments}};
  return Json{{"index", index}, {"id", call.id}, {"type", "function"}, {"function", std::move(fn)}};
}

Json chat_tool_completion_json(const ResponseMeta& meta, const std::string& content,
                               const std::vector<ToolCall>& calls, std::string_view finish,
                               const Usage& usage) {
  Json j = meta_json(Endpoint::kChat, meta, false);
  Json msg;
  msg["role"] = "assistant";
  msg["content"] = content.empty() && !calls.empty() ? Json(nullptr) : Json(content);
  msg["refusal"] = nullptr;
  if (!calls.empty()) {
    Json arr = Json::array();
    for (const ToolCall& c : calls) {
      arr.push_back({{"id", c.id},
                     {"type", "function"},
                     {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    msg["tool_calls"] = std::move(arr);
  }
  Json choice;
  choice["index"] = 0;
  choice["message"] = std::move(msg);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish;
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(usage);
  return j;
}

Json text_completion_json(const ResponseMeta& meta, const std::string& text,
                          std::string_view finish, const Usage& usage,
                          const std::optional<std::vector<LogprobEntry>>& logprobs) {
  Json j = meta_json(Endpoint::kCompletion, meta, false);
  Json choice;
  choice["text"] = text;
  choice["index"] = 0;
  choice["logprobs"] = logprobs ? completion_logprobs_json(*logprobs, 0) : Json(nullptr);
  choice["finish_reason"] = finish;
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(usage);
  return j;
}

Json stream_chunk_json(Endpoint endpoint, const ResponseMeta& meta, const ChunkParts& parts,
                       bool include_usage) {
  Json j = meta_json(endpoint, meta, true);
  Json choice;
  choice["index"] = 0;
  if (endpoint == Endpoint::kChat) {
    Json delta = Json::object();
    if (parts.role) delta["role"] = "assistant";
    if (parts.content) delta["content"] = *parts.content;
    if (parts.tool_calls) delta["tool_calls"] = *parts.tool_calls;
    choice["delta"] = std::move(delta);
    choice["logprobs"] = parts.logprobs ? chat_logprobs_json(*parts.logprobs) : Json(nullptr);
  } else {
    choice["text"] = parts.content ? (*parts.content) : std::string();
    choice["logprobs"] = parts.logprobs
                             ? completion_logprobs_json(*parts.logprobs, parts.text_offset)
                             : Json(nullptr);
  }
  choice["finish_reason"] = parts.finish ? Json(*parts.finish) : Json(nullptr);
  j["choices"] = Json::array({std::move(choice)});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

Json usage_chunk_json(Endpoint endpoint, const ResponseMeta& meta, const Usage& usage) {
  Json j = meta_json(endpoint, meta, true);
  j["choices"] = Json::array();
  j["usage"] = usage_json(usage);
  return j;
}

Json generation_settings_json(const GenerationConfig& c) {
  const auto round6 = [](float f) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", static_cast<double>(f));
    return std::strtod(buf, nullptr);
  };
  Json j;
  j["max_tokens"] = c.max_tokens;
  j["temperature"] = round6(c.temperature);
  j["top_k"] = c.top_k;
  j["top_p"] = round6(c.top_p);
  j["min_p"] = round6(c.min_p);
  j["repeat_penalty"] = round6(c.repetition_penalty);
  j["presence_penalty"] = round6(c.presence_penalty);
  j["frequency_penalty"] = round6(c.frequency_penalty);
  j["repeat_last_n"] = c.penalty_last_n;
  j["seed"] = c.seed ? Json(*c.seed) : Json(-1);
  j["stop"] = c.stop;
  j["ignore_eos"] = c.ignore_eos;
  return j;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string sse_event(const Json& j) { return "data: " + dump(j) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace geniex::server
