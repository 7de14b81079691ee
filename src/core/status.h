// Status and Result<T>: the error currency of every layer below the public API.
// No exceptions cross a layer boundary; user input never aborts, it returns a Status.
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

#define GENIEX_CONCAT_INNER_(a, b) a##b
#define GENIEX_CONCAT_(a, b) GENIEX_CONCAT_INNER_(a, b)

/// Returns the Status from the enclosing function if `expr` (a Status) is not OK.
#define GENIEX_TRY(expr)                                     \
  do {                                                       \
    ::geniex::Status geniex_try_status_ = (expr);            \
    if (!geniex_try_status_.ok()) return geniex_try_status_; \
  } while (0)

#define GENIEX_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

/// `GENIEX_ASSIGN_OR_RETURN(auto x, f());` — unwraps a Result or returns its Status.
#define GENIEX_ASSIGN_OR_RETURN(lhs, expr) \
  GENIEX_ASSIGN_OR_RETURN_IMPL_(GENIEX_CONCAT_(geniex_result_, __LINE__), lhs, expr)
