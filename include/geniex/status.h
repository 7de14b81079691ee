// Status and Result<T>: the error currency of GenieX, shared by the public API and every layer
// below it. No exceptions cross a layer boundary; user input never aborts, it returns a Status.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace geniex {

/// Broad error classes; each boundary (C ABI, HTTP, Python) maps them once.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    ///< caller passed something malformed
  kNotFound,           ///< file, key or tensor absent
  kOutOfRange,         ///< index or size beyond a limit
  kDataLoss,           ///< a file is corrupt or truncated
  kUnimplemented,      ///< valid but not supported by this build
  kResourceExhausted,  ///< memory or another budget ran out
  kIoError,            ///< the operating system refused an I/O call
  kInternal,           ///< a bug of ours
};

/// Human-readable name of a code, e.g. "DATA_LOSS".
std::string_view status_code_name(StatusCode code);

/// An outcome: kOk, or a code with a message that names what was wrong and where.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  [[nodiscard]] bool ok() const { return code_ == StatusCode::kOk; }
  [[nodiscard]] StatusCode code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  /// "CODE: message", or "OK".
  [[nodiscard]] std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string msg) {
  return {StatusCode::kInvalidArgument, std::move(msg)};
}
inline Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status out_of_range(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
inline Status data_loss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
inline Status unimplemented(std::string msg) {
  return {StatusCode::kUnimplemented, std::move(msg)};
}
inline Status resource_exhausted(std::string msg) {
  return {StatusCode::kResourceExhausted, std::move(msg)};
}
inline Status io_error(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
inline Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

/// A value or the Status that explains its absence.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  [[nodiscard]] bool ok() const { return std::holds_alternative<T>(v_); }
  [[nodiscard]] Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace geniex
