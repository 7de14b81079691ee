// The server's own HTTP request and response: what route handlers see instead of an HTTP
// library's types, so only the transport (http_transport.cpp) includes Boost.Beast.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace geniex::server {

/// One request as read by the transport: the header is checked against the limits and the body
/// is complete (never compressed: a Content-Encoding other than identity is refused first).
struct HttpRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string path;    ///< the target up to '?'
  std::string query;   ///< after '?', without it ("" if none)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string peer;  ///< the client's address
  /// True once the client has closed its end of the connection (a handler that computes a
  /// whole response polls it to stop working for nobody). Always set by the transport.
  std::function<bool()> peer_gone = [] { return false; };

  /// The first header named `name` (case-insensitive), or "" when absent.
  [[nodiscard]] std::string_view header(std::string_view name) const;
};

/// Where a streamed response writes its body, piece by piece (sent as HTTP chunks).
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  /// Sends `data` (blocks until the socket took it). False when the client is gone or too
  /// slow; stop producing then.
  virtual bool write(std::string_view data) = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers
  std::string body;
  /// When set, the body is this producer's output (chunked transfer) and `body` is unused. It
  /// runs on the worker thread that handled the request, right after the handler returned.
  std::function<void(StreamWriter&)> stream;
};

/// Case-insensitive ASCII comparison of header names and tokens.
bool iequals(std::string_view a, std::string_view b);

}  // namespace geniex::server
