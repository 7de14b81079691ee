// Helpers shared by the NPU backend tests: opening the reference plugin, random data, weights,
// and comparing a run on the NPU against graph::run_reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/npu/npu_backend.h"
#include "graph/run_reference.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::backends::npu_test {

inline size_t sz(int64_t v) { return static_cast<size_t>(v); }

/// The reference plugin as a Backend, opened with `config`.
inline std::unique_ptr<Backend> ref_npu(const std::string& config = {},
                                        size_t max_cached_graphs = 16) {
  NpuOptions o;
  o.config = config;
  o.max_cached_graphs = max_cached_graphs;
  auto b = make_npu_backend(std::filesystem::path(GENIEX_NPU_REF_PLUGIN), o);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? std::move(*b) : nullptr;
}

/// `rows` rows of `k` Gaussian values (standard deviation `sigma`) stored as `t`.
inline std::vector<uint8_t> make_weight(GgmlType t, int64_t k, int64_t rows, uint32_t seed,
                                        float sigma = 0.5f) {
  auto out = quant::testing::gaussian_rows(t, sz(k), sz(rows), sigma, seed);
  EXPECT_FALSE(out.empty()) << ggml_type_name(t) << " rows failed to quantize";
  return out;
}

/// sum (a - b)^2 / sum b^2 (normalized mean squared error of `a` against the reference `b`).
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    num += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    den += double{b[i]} * b[i];
  }
  return den > 0 ? num / den : num;
}

/// max |a - b| / max |b|.
inline double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    d = std::max(d, std::fabs(double{a[i]} - b[i]));
    m = std::max(m, std::fabs(double{b[i]}));
  }
  return m > 0 ? d / m : d;
}

/// A graph with its inputs and weights bound, one F32 output, and initial state bytes.
struct Case {
  graph::Graph g;
  graph::NodeId out = 0;
  graph::Bindings base;  ///< inputs, weights, hooks (no states, no outputs)
  struct State {
    graph::NodeId id;
    GgmlType type;
    std::vector<uint8_t> bytes;
  };
  std::vector<State> states;
  std::vector<std::vector<float>> f32_data;
  std::vector<std::vector<int32_t>> i32_data;
  std::vector<std::vector<uint8_t>> weight_data;

  /// An F32 input holding `v`.
  graph::NodeId f32(const graph::TensorDesc& d, std::vector<float> v, std::string name = "x") {
    const graph::NodeId id = g.add_input(d, std::move(name));
    f32_data.push_back(std::move(v));
    base.bind_input(id, std::span<const float>(f32_data.back()));
    return id;
  }
  /// An F32 input of Gaussian values (sigma 1).
  graph::NodeId rand(const graph::TensorDesc& d, uint32_t seed, std::string name = "x") {
    return f32(d, quant::testing::gaussian(sz(d.nelements()), 1.0f, seed), std::move(name));
  }
  /// An I32 input holding `v`.
  graph::NodeId i32(std::vector<int32_t> v, std::string name = "idx") {
    const graph::NodeId id =
        g.add_input(graph::make_desc(GgmlType::kI32, static_cast<int64_t>(v.size())), name);
    i32_data.push_back(std::move(v));
    base.bind_input(id, std::span<const int32_t>(i32_data.back()));
    return id;
  }
  /// A [k, rows] weight of type `t` with Gaussian values.
  graph::NodeId weight(GgmlType t, int64_t k, int64_t rows, uint32_t seed, std::string name = "w") {
    const graph::NodeId id = g.add_weight(graph::make_desc(t, k, rows), std::move(name));
    weight_data.push_back(make_weight(t, k, rows, seed));
    base.bind_weight(id, t, weight_data.back());
    return id;
  }
  /// A state of `d` starting as Gaussian values (sigma 1) stored as d.dtype.
  graph::NodeId state(const graph::TensorDesc& d, uint32_t seed, std::string name = "kv") {
    const graph::NodeId id = g.add_state(d, std::move(name));
    states.push_back({id, d.dtype, make_weight(d.dtype, d.ne[0], d.nrows(), seed)});
    return id;
  }
};

/// Outputs and final states of one run.
struct Outcome {
  Status status;
  std::vector<float> out;
  std::vector<std::vector<uint8_t>> states;
};

/// Runs `c` on `backend` (or on graph::run_reference when null), each with its own copy of the
/// states.
inline Outcome run_case(Backend* backend, const Case& c) {
  Outcome o;
  graph::Bindings b = c.base;
  for (const auto& s : c.states) o.states.push_back(s.bytes);
  for (size_t i = 0; i < c.states.size(); ++i) {
    b.bind_state(c.states[i].id, c.states[i].type, o.states[i]);
  }
  o.out.assign(sz(c.g.node(c.out).desc.nelements()), 0.0f);
  b.bind_output(c.out, o.out);
  o.status = backend != nullptr ? backend->run(c.g, b) : graph::run_reference(c.g, b);
  return o;
}

/// A graph::add_op that fails the test instead of returning an error.
inline graph::NodeId op(graph::Graph& g, graph::OpKind kind, const std::vector<graph::NodeId>& in,
                        const graph::OpParams& p = {}, std::string name = {}) {
  auto r = g.add_op(kind, in, p, std::move(name));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : 0;
}

/// Integers for an I32 input.
inline std::vector<int32_t> iota_i32(int64_t n, int32_t start = 0) {
  std::vector<int32_t> v(sz(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<int32_t>(i);
  return v;
}

/// F32 floats as weight bytes.
inline std::span<const uint8_t> bytes_of(const std::vector<float>& f) {
  return {reinterpret_cast<const uint8_t*>(f.data()), f.size() * sizeof(float)};
}

}  // namespace geniex::backends::npu_test
