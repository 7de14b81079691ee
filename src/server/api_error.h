// Errors in the OpenAI API's shape: {"error": {"message", "type", "param", "code"}} with the
// HTTP status that goes with them. Every failure the server reports goes through ApiError.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

namespace geniex::server {

using Json = nlohmann::ordered_json;

struct ApiError {
  int status = 400;                  ///< HTTP status
  std::string message;               ///< for people
  std::string type;                  ///< "invalid_request_error", "authentication_error", ...
  std::optional<std::string> param;  ///< the request field at fault, e.g. "messages[0].role"
  std::optional<std::string> code;   ///< machine-readable, e.g. "model_not_found"

  /// {"error": {...}} with null for an absent param or code.
  [[nodiscard]] Json to_json() const;
  /// to_json() as text.
  [[nodiscard]] std::string body() const;
};

/// 400: a field with the wrong JSON type (code "invalid_type").
ApiError invalid_type(const std::string& param, const std::string& expected);
/// 400: a field with a value outside its range or set (code "invalid_value").
ApiError invalid_value(const std::string& param, const std::string& message);
/// 400: a required field is missing (code "missing_required_parameter").
ApiError missing_param(const std::string& param);
/// 400: a field we understand but do not implement (code "unsupported_parameter").
ApiError unsupported(const std::string& param, const std::string& message);
/// 400: the body is not valid JSON (or not an object).
ApiError malformed_body(const std::string& detail);
/// 401: missing or wrong API key.
ApiError unauthorized();
/// 404: unknown model.
ApiError model_not_found(const std::string& model);
/// 404: unknown route.
ApiError route_not_found(const std::string& method, const std::string& path);
/// 405: a known path with another method (code "method_not_allowed").
ApiError method_not_allowed(const std::string& method, const std::string& path);
/// 413: body over the limit.
ApiError body_too_large(size_t limit);
/// 415: a request body in a Content-Encoding (gzip, deflate, ...) other than identity; the
/// server never inflates bodies (a small compressed body can expand without bound).
ApiError unsupported_encoding(const std::string& encoding);
/// 431: the request header is over the limit (bytes, all lines together).
ApiError header_too_large(size_t limit);
/// 400: the HTTP framing is malformed (e.g. two different Content-Length headers).
ApiError bad_http(const std::string& detail);
/// 503: the client (or everyone) holds the most connections the server allows.
ApiError too_many_connections(const std::string& which, int limit);
/// 429: every slot busy and the queue full.
ApiError queue_full(int parallel, int queue);
/// 503: the server is shutting down.
ApiError shutting_down();
/// 500: our own fault (never user input).
ApiError internal_error(const std::string& message);

/// A value or the ApiError that explains why there is none.
template <class T>
using ApiResult = std::variant<T, ApiError>;

}  // namespace geniex::server
