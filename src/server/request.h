// Parsing and validation of OpenAI request bodies (POST /v1/chat/completions and
// /v1/completions) into a CompletionRequest that carries our GenerationConfig.
//
// Like the OpenAI API: unknown fields are ignored; a known field with the wrong JSON type or an
// out-of-range value is a 400 naming the field (`param`); features we do not implement (n > 1,
// tools, logit_bias, echo, ...) are a 400 that says so rather than being silently dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "geniex/geniex.hpp"
#include "server/api_error.h"

namespace geniex::server {

enum class Endpoint { kChat, kCompletion };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  std::vector<ChatMessage> messages;   ///< kChat
  std::string prompt;                  ///< kCompletion, text prompt
  std::vector<int32_t> prompt_tokens;  ///< kCompletion, a prompt given as token ids
  bool prompt_is_tokens = false;
  /// Sampling and stops (OpenAI defaults: temperature 1, top_p 1, no top-k / min-p).
  /// max_tokens is the requested bound, or -1 when the request gave none (fill the context).
  GenerationConfig config;
  bool stream = false;
  bool include_usage = false;  ///< stream_options.include_usage
  /// -1 = no logprobs; else how many alternatives per token (chat top_logprobs 0..20,
  /// completions logprobs 0..5).
  int32_t logprobs = -1;
  bool json_object = false;  ///< response_format {"type": "json_object"}
};

/// Largest max_tokens accepted before clamping to the context (keeps int32 arithmetic safe).
inline constexpr int64_t kMaxTokensCap = 1 << 30;

/// Parses a chat completion body.
ApiResult<CompletionRequest> parse_chat_request(std::string_view body);
/// Parses a (legacy) completion body.
ApiResult<CompletionRequest> parse_completion_request(std::string_view body);

}  // namespace geniex::server
