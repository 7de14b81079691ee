// How close each backend must come to graph::run_reference, per (backend family, subject,
// dtype[, problem variant]). The table itself is tolerance.cpp: one row per entry, each with
// why it is not exact where it is not. A (family, subject, dtype) without a row is one the
// backend must answer kUnsupported for.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"

namespace geniex::conformance {

/// How an output is compared with the reference's.
enum class Metric : uint8_t {
  kBitExact,  ///< every element's bits equal (states: every byte)
  kMaxRel,    ///< max |got - ref| <= bound * max(max |ref|, 1e-3)
  kNmse,      ///< sum (got - ref)^2 / sum ref^2 <= bound (0 / 0 = 0)
  kGeluF16,   ///< |got - ref| <= (bound * |x| + 1e-6) * |up| per element, x the GELU input
};

/// "bit-exact", "max-rel", "nmse", "gelu-f16".
std::string_view metric_name(Metric m);

/// One entry of the table.
struct Tolerance {
  Metric metric = Metric::kBitExact;
  double bound = 0.0;
  /// The measured error must exceed this (the backend runs its own arithmetic, not the
  /// reference's); 0: no lower bound.
  double min_error = 0.0;
  std::string_view why;
};

/// The entry for `variant` of (family, subject, dtype), else the plain entry (variant ""), else
/// nullopt (the backend must not claim to run it).
std::optional<Tolerance> find_tolerance(std::string_view family, std::string_view subject,
                                        GgmlType dtype, std::string_view variant = {});

}  // namespace geniex::conformance
