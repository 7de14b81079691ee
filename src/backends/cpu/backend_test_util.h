// Shared helpers of the CPU backend tests (cpu_backend_test.cpp, norm_rope_test.cpp): a backend
// per thread count, graph building, and comparison against graph::run_reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "graph/run_reference.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::backends::cpu_test {

using graph::Bindings;
using graph::Graph;
using graph::make_desc;
using graph::NodeId;
using graph::OpKind;
using graph::OpParams;
using quant::testing::gaussian;

inline constexpr GgmlType kF32 = GgmlType::kF32;
inline constexpr GgmlType kF16 = GgmlType::kF16;
inline constexpr GgmlType kI32 = GgmlType::kI32;

inline constexpr double kExactTol = 1e-6;
inline constexpr double kMatMulTol = 1e-5;
inline constexpr double kAttnTol = 1e-5;

inline size_t sz(int64_t v) { return static_cast<size_t>(v); }

inline std::unique_ptr<Backend> backend_with(int threads) {
  auto b = make_cpu_backend(CpuBackendOptions{threads});
  EXPECT_TRUE(b.ok());
  return b.ok() ? std::move(*b) : nullptr;
}

inline std::span<const uint8_t> bytes_of(const std::vector<float>& f) {
  return {reinterpret_cast<const uint8_t*>(f.data()), f.size() * sizeof(float)};
}

// `rows` rows of `k` values stored as `t`: quantize_row where a quantizer exists, otherwise
// random blocks with finite scales (Q2_K, Q3_K, IQ4_NL, ...).
inline std::vector<uint8_t> make_weight(GgmlType t, int64_t k, int64_t rows, uint32_t seed) {
  const size_t row = quant::testing::row_bytes(t, sz(k));
  if (!quant::can_quantize(t)) {
    const size_t nblocks = row * sz(rows) / traits(t).type_size;
    return quant::testing::random_blocks(t, nblocks, 0.05f, seed);
  }
  auto out = quant::testing::gaussian_rows(t, sz(k), sz(rows), 0.5f, seed);
  EXPECT_FALSE(out.empty()) << ggml_type_name(t) << " rows failed to quantize";
  return out;
}

inline NodeId add(Graph& g, OpKind kind, const std::vector<NodeId>& in, const OpParams& p = {},
                  std::string name = {}) {
  auto r = g.add_op(kind, in, p, std::move(name));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : 0;
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

// Each element within `bound` of the reference; reports the worst one (NaN counts as worst).
inline void expect_within(const std::vector<float>& got, const std::vector<float>& want,
                          double bound, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (std::isnan(e)) {
      worst = std::numeric_limits<double>::infinity();
      at = i;
      break;
    }
    if (e > worst) {
      worst = e;
      at = i;
    }
  }
  EXPECT_LE(worst, bound) << what << ": element " << at << " got " << got[at] << " want "
                          << want[at];
}

// Each element within tol * max(max|want|, floor) of the reference.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                         const std::string& what, double floor = 1e-3) {
  expect_within(got, want, tol * std::max(max_abs(want), floor), what);
}

// Each element within its own bound[i] of the reference.
inline void expect_within_each(const std::vector<float>& got, const std::vector<float>& want,
                               const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(bound.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(e <= bound[i])) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i]
                    << " (bound " << bound[i] << ")";
    }
  }
}

// Runs the reference and the CPU backend (1 and 3 threads) on `b` and compares node `out`:
// within tol * max|ref| everywhere, or within per_element[i] when given.
inline void expect_matches_reference(const Graph& g, const Bindings& b, NodeId out, double tol,
                                     const std::string& what,
                                     const std::vector<double>* per_element = nullptr) {
  const auto n = sz(g.node(out).desc.nelements());
  std::vector<float> want(n);
  Bindings rb = b;
  rb.bind_output(out, want);
  const Status rs = graph::run_reference(g, rb);
  ASSERT_TRUE(rs.ok()) << what << ": " << rs.to_string();
  for (int threads : {1, 3}) {
    auto be = backend_with(threads);
    ASSERT_NE(be, nullptr);
    EXPECT_EQ(be->kind(), DeviceKind::kCpu);
    std::vector<float> got(n, std::numeric_limits<float>::quiet_NaN());
    Bindings cb = b;
    cb.bind_output(out, got);
    const Status s = be->run(g, cb);
    ASSERT_TRUE(s.ok()) << what << " (" << threads << " threads): " << s.to_string();
    const std::string label = what + " (" + std::to_string(threads) + " threads)";
    if (per_element != nullptr) {
      expect_within_each(got, want, *per_element, label);
    } else {
      expect_close(got, want, tol, label);
    }
    // A second run on the same backend (arena and scratch reused) gives the same answer.
    std::vector<float> again(n, std::numeric_limits<float>::quiet_NaN());
    cb.bind_output(out, again);
    ASSERT_TRUE(be->run(g, cb).ok());
    EXPECT_EQ(std::memcmp(again.data(), got.data(), n * sizeof(float)), 0) << what << " rerun";
  }
}

// Runs the reference and `be` (kept by the caller, so its caches carry over between calls) on
// `b` and expects node `out` bit for bit.
inline void expect_same_bits_as_reference(Backend& be, const Graph& g, const Bindings& b,
                                          NodeId out, const std::string& what) {
  const auto n = sz(g.node(out).desc.nelements());
  std::vector<float> want(n), got(n, std::numeric_limits<float>::quiet_NaN());
  Bindings rb = b;
  rb.bind_output(out, want);
  const Status rs = graph::run_reference(g, rb);
  ASSERT_TRUE(rs.ok()) << what << ": " << rs.to_string();
  Bindings cb = b;
  cb.bind_output(out, got);
  const Status s = be.run(g, cb);
  ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
  EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << what;
}

// Test names from the type parameter ("Q4_K").
inline std::string type_param_name(const ::testing::TestParamInfo<GgmlType>& p) {
  return std::string(ggml_type_name(p.param));
}

}  // namespace geniex::backends::cpu_test
