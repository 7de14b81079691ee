// One graph with the data its bindings borrow: what the conformance suite runs on a backend and on
// graph::run_reference, and what backend-specific tests (src/backends/*/..._test.cpp) build
// their graphs with.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "graph/run_reference.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::conformance {

using graph::NodeId;
using graph::OpKind;
using graph::OpParams;
using quant::testing::gaussian;

inline constexpr GgmlType kF32 = GgmlType::kF32;
inline constexpr GgmlType kF16 = GgmlType::kF16;
inline constexpr GgmlType kI32 = GgmlType::kI32;
inline constexpr NodeId kNoNode = std::numeric_limits<NodeId>::max();

inline size_t sz(int64_t v) { return static_cast<size_t>(v); }

/// `rows` rows of `k` values stored as `t`: Gaussian values (standard deviation `sigma`) through
/// quant::quantize_row where a quantizer exists, otherwise random blocks with finite scales
/// (Q2_K, Q3_K, IQ4_XS, MXFP4, ...).
inline std::vector<uint8_t> make_weight(GgmlType t, int64_t k, int64_t rows, uint32_t seed,
                                        float sigma = 0.5f) {
  const size_t row = quant::testing::row_bytes(t, sz(k));
  if (!quant::can_quantize(t)) {
    return quant::testing::random_blocks(t, row * sz(rows) / traits(t).type_size, 0.05f, seed);
  }
  auto out = quant::testing::gaussian_rows(t, sz(k), sz(rows), sigma, seed);
  EXPECT_FALSE(out.empty()) << ggml_type_name(t) << " rows failed to quantize";
  return out;
}

/// F32 values as weight bytes.
inline std::span<const uint8_t> bytes_of(const std::vector<float>& f) {
  return {reinterpret_cast<const uint8_t*>(f.data()), f.size() * sizeof(float)};
}

/// n consecutive integers from `start`.
inline std::vector<int32_t> iota_i32(int64_t n, int32_t start = 0) {
  std::vector<int32_t> v(sz(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<int32_t>(i);
  return v;
}

/// A graph::Graph::add_op that fails the test instead of returning an error.
inline NodeId add(graph::Graph& g, OpKind kind, const std::vector<NodeId>& in,
                  const OpParams& p = {}, std::string name = {}) {
  if (name.empty()) name = std::string(graph::op_name(kind));
  auto r = g.add_op(kind, in, p, std::move(name));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : 0;
}

/// A graph, the host data its bindings point at (deques: elements never move), its initial
/// states and the node whose result is compared.
struct Problem {
  std::string name;     ///< shape / variant description for messages
  std::string variant;  ///< tolerance-table variant ("" = the op's plain entry)
  graph::Graph g;
  graph::Bindings b;  ///< inputs, weights, hooks; states and outputs are bound per run
  NodeId out = kNoNode;
  struct State {
    NodeId id;
    GgmlType type;
    std::vector<uint8_t> bytes;  ///< initial contents
  };
  std::vector<State> states;
  std::deque<std::vector<float>> f32;
  std::deque<std::vector<int32_t>> i32;
  std::deque<std::vector<uint8_t>> bytes;
  /// For the GELU bound (tolerance metric kGeluF16): the GELU input and the GLU `up` factor.
  const std::vector<float>* gelu_x = nullptr;
  const std::vector<float>* gelu_up = nullptr;
  /// More runs on the same backend instance: called before run i (1..extra_runs), e.g. to
  /// change positions; each run is compared with the reference on the data it then holds.
  int extra_runs = 0;
  std::function<void(Problem&, int)> before_run;
  /// When > 0: the last run repeated over the initial states must be at least this far (NMSE)
  /// from the reference, i.e. the run really reads the states the earlier runs wrote.
  double min_error_over_fresh_states = 0;
  /// States after the run: "" = byte-identical to the reference's; else compared (dequantized)
  /// under the tolerance-table row of this variant (written from computed values).
  std::string state_variant;
  /// Real-model sizes (Gemma 3 270M prefills): run on one instance only, without the repeat
  /// run, so the suite stays fast under qemu and ASan.
  bool heavy = false;
  uint32_t seed = 1;

  /// Sets the static token count of the graph (0: any).
  void tokens(int64_t t) { g.set_batch_tokens(static_cast<int32_t>(t)); }

  /// An F32 input of Gaussian values.
  NodeId input(std::array<int64_t, 4> ne, float sigma = 1.0f, std::string nm = "x") {
    return values(ne, gaussian(sz(ne[0] * ne[1] * ne[2] * ne[3]), sigma, seed++), std::move(nm));
  }
  /// An F32 input holding `v` (copied).
  NodeId values(std::array<int64_t, 4> ne, std::vector<float> v, std::string nm = "x") {
    const NodeId id = g.add_input(graph::make_desc(kF32, ne[0], ne[1], ne[2], ne[3]), nm);
    f32.push_back(std::move(v));
    b.bind_input(id, std::span<const float>(f32.back()));
    return id;
  }
  /// An I32 input of shape [v.size()] (or [ne0, ne1] when ne0 > 0).
  NodeId ints(std::vector<int32_t> v, std::string nm = "ids", int64_t ne0 = 0) {
    const int64_t n = static_cast<int64_t>(v.size());
    const auto d = ne0 > 0 ? graph::make_desc(kI32, ne0, n / ne0) : graph::make_desc(kI32, n);
    const NodeId id = g.add_input(d, std::move(nm));
    i32.push_back(std::move(v));
    b.bind_input(id, std::span<const int32_t>(i32.back()));
    return id;
  }
  /// A [ne0, ne1] weight of type t (see make_weight).
  NodeId weight(GgmlType t, int64_t ne0, int64_t ne1 = 1, float sigma = 0.5f,
                std::string nm = "w") {
    const NodeId id = g.add_weight(graph::make_desc(t, ne0, ne1), std::move(nm));
    bytes.push_back(make_weight(t, ne0, ne1, seed++, sigma));
    b.bind_weight(id, t, bytes.back());
    return id;
  }
  /// A state of `d` whose rows start as Gaussian values stored as d.dtype; `spare` extra bytes
  /// at the end (a cache with room to grow) that no op may touch.
  NodeId state(const graph::TensorDesc& d, std::string nm = "kv", size_t spare = 0) {
    const NodeId id = g.add_state(d, std::move(nm));
    auto bytes_v = make_weight(d.dtype, d.ne[0] * d.ne[1], d.ne[2] * d.ne[3], seed++, 1.0f);
    bytes_v.resize(bytes_v.size() + spare, 0xAB);
    states.push_back({id, d.dtype, std::move(bytes_v)});
    return id;
  }
  /// An op node (named after its kind).
  NodeId op(OpKind k, const std::vector<NodeId>& in, const OpParams& p = {}) {
    return add(g, k, in, p);
  }
};

/// Result and final states of one run.
struct Outcome {
  Status status;
  std::vector<float> out;
  std::vector<std::vector<uint8_t>> states;
};

/// Runs `p` on `backend` (graph::run_reference when null) with its own copy of `states` (the
/// problem's initial states when null); NaN-filled output, so unwritten elements show.
Outcome run_problem(const Problem& p, backends::Backend* backend,
                    const std::vector<std::vector<uint8_t>>* states = nullptr);

}  // namespace geniex::conformance
