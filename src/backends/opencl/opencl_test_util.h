// Shared helpers of the OpenCL backend tests: one backend per test binary (its kernels build
// once), graphs fed with random data, and NMSE against graph::run_reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/opencl/opencl_backend.h"
#include "graph/run_reference.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::backends::opencl_test {

inline size_t sz(int64_t v) { return static_cast<size_t>(v); }

/// A fresh, empty program-cache folder under the test temp dir.
inline std::string fresh_cache_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "geniex_opencl_" + name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return dir;
}

/// The backend every op test shares (created on first use). Its program cache folder is kept
/// across test processes (ctest runs each test alone), so only the first one compiles.
inline Backend& shared_backend() {
  static std::unique_ptr<Backend> b = [] {
    OpenclBackendOptions o;
    o.program_cache_dir = ::testing::TempDir() + "geniex_opencl_shared";
    auto r = make_opencl_backend(o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(*r) : nullptr;
  }();
  if (!b) throw std::runtime_error("no OpenCL backend");
  return *b;
}

/// sum (a - r)^2 / sum r^2 (0 when both are zero).
inline double nmse(const std::vector<float>& a, const std::vector<float>& r) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double d = static_cast<double>(a[i]) - r[i];
    num += d * d;
    den += static_cast<double>(r[i]) * r[i];
  }
  if (den == 0.0) return num == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return num / den;
}

/// A graph with the data its bindings borrow.
struct Case {
  graph::Graph g;
  graph::Bindings b;
  std::deque<std::vector<float>> f32;
  std::deque<std::vector<int32_t>> i32;
  std::deque<std::vector<uint8_t>> bytes;
  uint32_t seed = 1;

  graph::NodeId input(std::array<int64_t, 4> ne, float sigma = 1.0f) {
    const graph::NodeId id =
        g.add_input(graph::make_desc(GgmlType::kF32, ne[0], ne[1], ne[2], ne[3]), "in");
    f32.push_back(quant::testing::gaussian(sz(ne[0] * ne[1] * ne[2] * ne[3]), sigma, seed++));
    b.bind_input(id, std::span<const float>(f32.back()));
    return id;
  }
  graph::NodeId ints(std::vector<int32_t> v, std::string name = "ids") {
    const graph::NodeId id =
        g.add_input(graph::make_desc(GgmlType::kI32, static_cast<int64_t>(v.size())), name);
    i32.push_back(std::move(v));
    b.bind_input(id, std::span<const int32_t>(i32.back()));
    return id;
  }
  /// A [ne0, ne1] weight of type t from Gaussian values (quantized by the reference).
  graph::NodeId weight(GgmlType t, int64_t ne0, int64_t ne1 = 1, float sigma = 0.5f) {
    const graph::NodeId id = g.add_weight(graph::make_desc(t, ne0, ne1), "w");
    const size_t row = quant::testing::row_bytes(t, sz(ne0));
    if (!quant::can_quantize(t)) {  // e.g. IQ4_NL: random blocks with finite scales
      bytes.push_back(
          quant::testing::random_blocks(t, row * sz(ne1) / traits(t).type_size, 0.05f, seed++));
      b.bind_weight(id, t, bytes.back());
      return id;
    }
    const auto f = quant::testing::gaussian(sz(ne0 * ne1), sigma, seed++);
    std::vector<uint8_t> out(row * sz(ne1));
    for (size_t r = 0; r < sz(ne1); ++r) {
      EXPECT_TRUE(quant::quantize_row(t, std::span(f).subspan(r * sz(ne0), sz(ne0)),
                                      std::span(out).subspan(r * row, row))
                      .ok());
    }
    bytes.push_back(std::move(out));
    b.bind_weight(id, t, bytes.back());
    return id;
  }
  graph::NodeId op(graph::OpKind k, const std::vector<graph::NodeId>& in,
                   const graph::OpParams& p = {}) {
    auto r = g.add_op(k, in, p, std::string(graph::op_name(k)));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : 0;
  }
};

/// Runs `c` with the reference and with `backend`, and returns the NMSE of node `out` (printed
/// with `what`); fails the test when the backend is not native for it or a run fails.
inline double compare(Case& c, graph::NodeId out, const std::string& what,
                      Backend& backend = shared_backend()) {
  const size_t n = sz(c.g.node(out).desc.nelements());
  std::vector<float> ref(n), got(n, std::numeric_limits<float>::quiet_NaN());
  c.b.bind_output(out, ref);
  Status s = graph::run_reference(c.g, c.b);
  EXPECT_TRUE(s.ok()) << s.to_string();
  for (graph::NodeId id = 0; id < c.g.size(); ++id) {
    const OpSupport sup = backend.supports(c.g, id);
    EXPECT_EQ(sup.level, Support::kNative) << what << ": node " << id << ": " << sup.reason;
  }
  c.b.bind_output(out, got);
  s = backend.run(c.g, c.b);
  EXPECT_TRUE(s.ok()) << what << ": " << s.to_string();
  const double e = nmse(got, ref);
  std::printf("[ nmse ] %-48s %.3g\n", what.c_str(), e);
  return e;
}

}  // namespace geniex::backends::opencl_test
