// Engine errors as Python exceptions: a Status that is not OK is thrown as StatusError, and the
// translator registered by register_status_errors() raises the geniex.errors class for its code
// (GenieXError subclasses that also derive from the builtin HF users catch).
#pragma once

#include <nanobind/nanobind.h>

#include <exception>
#include <string>
#include <utility>

#include "geniex/geniex.hpp"

namespace geniex::python {

class StatusError : public std::exception {
 public:
  explicit StatusError(Status s) : status_(std::move(s)) {}
  [[nodiscard]] const char* what() const noexcept override { return status_.message().c_str(); }
  [[nodiscard]] const Status& status() const { return status_; }

 private:
  Status status_;
};

/// Throws StatusError unless `s` is OK.
inline void check(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}

/// The value, or throws StatusError.
template <typename T>
T unwrap(Result<T>&& r) {
  if (!r.ok()) throw StatusError(r.status());
  return std::move(*r);
}

/// Installs the StatusError -> geniex.errors translator.
void register_status_errors();

/// UTF-8 text as a Python str; bytes that are not UTF-8 become U+FFFD (model output may split
/// or invent byte sequences), never an exception.
nanobind::str to_str(std::string_view text);

}  // namespace geniex::python
