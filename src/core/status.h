// Internal view of the status types: the public Status/Result plus the propagation macros
// that only GenieX's own layers use.
#pragma once

#include "geniex/status.h"

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
