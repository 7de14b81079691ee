// Error measures of a backend's output against the reference's, under a tolerance-table metric.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conformance/problem.h"
#include "conformance/tolerance.h"

namespace geniex::conformance {

/// sum (a - r)^2 / sum r^2 (0 when both are zero, infinity when only r is).
double nmse(const std::vector<float>& a, const std::vector<float>& r);

/// max |a - r| / max(max |r|, floor); NaN anywhere in a is infinity.
double max_rel(const std::vector<float>& a, const std::vector<float>& r, double floor = 1e-3);

/// The error of `got` against `want` under `metric` (for kGeluF16: the largest ratio of an
/// element's error to its own bound, so <= 1 passes; for kBitExact: the number of differing
/// elements), and whether it is within `tol`.
struct Measured {
  double error = 0.0;
  bool ok = false;
};
Measured measure(const Tolerance& tol, const std::vector<float>& got,
                 const std::vector<float>& want, const Problem& p);

/// Runs `p` (output node `out`, its states as bound in p.b) with the reference and with
/// `backend`; expects every node native and both runs to succeed; prints and returns the NMSE.
double compare_with_reference(Problem& p, NodeId out, const std::string& what,
                              backends::Backend& backend);

/// Expects max_rel(got, want) <= tol (for the backends' own tests).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_LE(max_rel(got, want), tol) << what;
}

}  // namespace geniex::conformance
