#include "server/api_error.h"

namespace geniex::server {

Json ApiError::to_json() const {
  Json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param ? Json(*param) : Json(nullptr);
  e["code"] = code ? Json(*code) : Json(nullptr);
  Json j;
  j["error"] = std::move(e);
  return j;
}

std::string ApiError::body() const {
  return to_json().dump(-1, ' ', false, Json::error_handler_t::replace);
}

ApiError invalid_type(const std::string& param, const std::string& expected) {
  return {400, "Invalid type for '" + param + "': expected " + expected + ".",
          "invalid_request_error", param, "invalid_type"};
}

ApiError invalid_value(const std::string& param, const std::string& message) {
  return {400, "Invalid '" + param + "': " + message, "invalid_request_error", param,
          "invalid_value"};
}

ApiError missing_param(const std::string& param) {
  return {400, "Missing required parameter: '" + param + "'.", "invalid_request_error", param,
          "missing_required_parameter"};
}

ApiError unsupported(const std::string& param, const std::string& message) {
  return {400, "Unsupported parameter '" + param + "': " + message, "invalid_request_error", param,
          "unsupported_parameter"};
}

ApiError malformed_body(const std::string& detail) {
  return {400,
          "We could not parse the JSON body of your request (" + detail +
              "). The body must be a JSON object.",
          "invalid_request_error", std::nullopt, std::nullopt};
}

ApiError unauthorized() {
  return {401,
          "Incorrect or missing API key. Send it as 'Authorization: Bearer <key>' (the key "
          "given to geniex serve --api-key).",
          "authentication_error", std::nullopt, "invalid_api_key"};
}

ApiError model_not_found(const std::string& model) {
  return {404,
          "The model '" + model +
              "' does not exist. GET /v1/models lists the model this server "
              "serves.",
          "invalid_request_error", "model", "model_not_found"};
}

ApiError route_not_found(const std::string& method, const std::string& path) {
  return {404, "Unknown request URL: " + method + " " + path + ".", "invalid_request_error",
          std::nullopt, "unknown_url"};
}

ApiError method_not_allowed(const std::string& method, const std::string& path) {
  return {405, "Method not allowed: " + method + " " + path + ".", "invalid_request_error",
          std::nullopt, "method_not_allowed"};
}

ApiError unsupported_encoding(const std::string& encoding) {
  return {415,
          "Content-Encoding '" + encoding +
              "' is not supported: send the request body uncompressed (identity).",
          "invalid_request_error", std::nullopt, "unsupported_content_encoding"};
}

ApiError header_too_large(size_t limit) {
  return {431,
          "The request header is larger than this server accepts (" + std::to_string(limit) +
              " bytes).",
          "invalid_request_error", std::nullopt, "header_too_large"};
}

ApiError bad_http(const std::string& detail) {
  return {400, "Malformed HTTP request: " + detail + ".", "invalid_request_error", std::nullopt,
          "bad_http_request"};
}

ApiError too_many_connections(const std::string& which, int limit) {
  return {503,
          "Too many open connections " + which + " (at most " + std::to_string(limit) +
              "). Close idle connections and retry.",
          "server_error", std::nullopt, "too_many_connections"};
}

ApiError body_too_large(size_t limit) {
  return {
      413,
      "The request body is larger than this server accepts (" + std::to_string(limit) + " bytes).",
      "invalid_request_error", std::nullopt, "request_too_large"};
}

ApiError queue_full(int parallel, int queue) {
  return {429,
          "The server is busy: " + std::to_string(parallel) + " requests in flight and " +
              std::to_string(queue) + " queued. Retry later.",
          "rate_limit_error", std::nullopt, "server_busy"};
}

ApiError shutting_down() {
  return {503, "The server is shutting down.", "server_error", std::nullopt, "shutting_down"};
}

ApiError internal_error(const std::string& message) {
  return {500, message, "server_error", std::nullopt, std::nullopt};
}

}  // namespace geniex::server
