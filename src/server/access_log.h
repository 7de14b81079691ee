// The access log of geniex serve: one line per request on stderr, never the content.
//
//   geniex serve: access: METHOD PATH STATUS in=PROMPT_TOKENS out=COMPLETION_TOKENS ms=MS
//
// in/out are "-" on routes that generate nothing (and on completions rejected before the prompt
// was tokenized); ms runs from routing to the last byte written ("-" for requests the transport
// rejected before routing, e.g. a body over the limit; method and path are "-" when the header
// could not be parsed); " client-closed" ends the line when the client hung up mid-stream or
// closed its connection while a whole response was generated (status 499 then). The path has no
// query string; bytes outside printable ASCII (and '"', '%', '\\') are %-escaped so a request
// cannot forge log lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace geniex::server {

struct AccessRecord {
  std::string_view method;
  std::string_view path;
  int status = 0;
  int64_t prompt_tokens = -1;      ///< -1 = not a generation
  int64_t completion_tokens = -1;  ///< -1 = not a generation
  double ms = -1;                  ///< -1 = unknown
  bool client_closed = false;
};

/// The line, without a trailing newline.
std::string access_log_line(const AccessRecord& r);

/// What the routes note about the request the calling thread serves. The transport runs a
/// request's routing, handler, streamed body and log line on one worker thread, so this is
/// thread-local: HttpServer resets it before routing, the completion routes fill it, the log
/// line reads it.
struct RequestNote {
  std::chrono::steady_clock::time_point start{};
  bool routed = false;  ///< start is set
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  bool client_closed = false;
};

RequestNote& this_request();

}  // namespace geniex::server
