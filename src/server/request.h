// Parsing and validation of OpenAI request bodies (POST /v1/chat/completions and
// /v1/completions) into a CompletionRequest that carries our GenerationConfig.
//
// Like the OpenAI API: unknown fields are ignored; a known field with the wrong JSON type or an
// out-of-range value is a 400 naming the field (`param`); features we do not implement (n > 1,
// tools, logit_bias, echo, ...) are a 400 that says so rather than being silently dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "geniex/geniex.hpp"
#include "server/api_error.h"
#include "server/tool_calls.h"

namespace geniex::server {

enum class Endpoint { kChat, kCompletion };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;  ///< as sent ("" when absent); any value means the served model
  std::vector<ChatMessage> messages;   ///< kChat
  std::string prompt;                  ///< kCompletion, text prompt
  std::vector<int32_t> prompt_tokens;  ///< kCompletion, a prompt given as token ids
  bool prompt_is_tokens = false;
  /// Sampling and stops: the request's fields over the server's defaults (see
  /// request_defaults). max_tokens is the bound, or -1 for none (fill the context).
  GenerationConfig config;
  bool stream = false;
  bool include_usage = false;  ///< stream_options.include_usage
  /// -1 = no logprobs; else how many alternatives per token (chat top_logprobs 0..20,
  /// completions logprobs 0..5).
  int32_t logprobs = -1;
  bool json_object = false;  ///< response_format {"type": "json_object"}
  /// response_format {"type": "json_schema", ...}: the schema goes to config.json_schema.
  /// kChat: image parts in `messages` (those messages carry ChatMessage::parts in order).
  int n_images = 0;
  /// kChat: tools, tool_choice, parallel_tool_calls.
  ToolsRequest tools;
  /// kChat: what the chat template gets besides the messages (set by the handler's tool plan).
  ChatTemplateOptions chat_options;
};

/// Images a chat request may carry (more: 400).
inline constexpr int kMaxImagesPerRequest = 8;

/// Where chat requests may take images from. Data URLs (data:image/png;base64,...) always;
/// file:// URLs only for files under `allowed_dirs` (after resolving symlinks and ".."); remote
/// http(s) URLs never (the server does not fetch: no network at run time).
struct ImageOptions {
  /// Canonical (realpath) directories, as geniex serve's --allow-image-dir; empty: file URLs
  /// are refused.
  std::vector<std::string> allowed_dirs;
  int max_images = kMaxImagesPerRequest;
};

/// Strict RFC 4648 base64 (standard alphabet, '=' padding to a multiple of 4, zero pad bits,
/// no whitespace). On failure returns nullopt and sets *bad_at to the offending offset.
std::optional<std::vector<uint8_t>> decode_base64(std::string_view in, size_t* bad_at = nullptr);

/// Largest max_tokens accepted before clamping to the context (keeps int32 arithmetic safe).
inline constexpr int64_t kMaxTokensCap = 1 << 30;

/// The defaults of a server started without sampling flags: GenerationConfig's (llama.cpp's:
/// temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, random seed) and max_tokens -1, which
/// means no server default: chat requests then run until end of generation or a full context,
/// completions requests get 16 tokens (the OpenAI API's default).
GenerationConfig request_defaults();

/// Parses a chat completion body. A field the body omits (or sends as null) takes its value
/// from `defaults` (sampling, penalties, seed, stop strings, ignore_eos, max_tokens).
/// Image content parts follow `images` (see ImageOptions).
ApiResult<CompletionRequest> parse_chat_request(
    std::string_view body, const GenerationConfig& defaults = request_defaults(),
    const ImageOptions& images = {});
/// Parses a (legacy) completion body; `defaults` as for parse_chat_request.
ApiResult<CompletionRequest> parse_completion_request(
    std::string_view body, const GenerationConfig& defaults = request_defaults());

}  // namespace geniex::server
