// RMSNorm and RoPE on the CPU backend, both promised bit-identical to the scalar references:
// rms_norm_rows against graph::ref::rms_norm bit for bit (row counts around its 4-row groups, odd
// lengths, with and without a weight, large, tiny, infinite and NaN inputs, 1 and 3 threads), and
// the backend's RmsNorm / RoPE ops against graph::run_reference, including RoPE's per-run cos /
// sin tables (Scratch::rope) shared across layers, parameter sets, frequency factors and runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/backend_test_util.h"
#include "backends/cpu/cpu_ops.h"
#include "graph/ref_ops.h"

namespace geniex::backends {
namespace {

using namespace cpu_test;  // NOLINT(build/namespaces): the shared test helpers

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(CpuRmsNorm, RowsMatchTheReferenceBitForBit) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 3, 64, 255, 640, 2048}) {
      for (int64_t rows : {1, 2, 3, 4, 5, 7, 8, 9, 33}) {
        std::vector<float> x(static_cast<size_t>(n * rows)), w(static_cast<size_t>(n));
        for (auto& v : x) v = nd(rng) * std::exp2(static_cast<float>(rng() % 40) - 20.0f);
        for (auto& v : w) v = nd(rng);
        if (rows > 2) {
          x[static_cast<size_t>(n)] = std::numeric_limits<float>::infinity();       // row 1
          x[static_cast<size_t>(2 * n)] = std::numeric_limits<float>::quiet_NaN();  // row 2
        }
        for (bool weighted : {false, true}) {
          std::vector<float> want(x.size()), got(x.size(), -1.0f);
          ASSERT_TRUE(graph::ref::rms_norm(
                          x, weighted ? std::span<const float>(w) : std::span<const float>(), n,
                          1e-6f, want)
                          .ok());
          cpu::rms_norm_rows(pool, x.data(), weighted ? w.data() : nullptr, n, rows, 1e-6f,
                             got.data());
          for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_TRUE(same_bits(got[i], want[i]) || (std::isnan(got[i]) && std::isnan(want[i])))
                << "n=" << n << " rows=" << rows << " weighted=" << weighted << " i=" << i << ": "
                << got[i] << " vs " << want[i];
          }
        }
      }
    }
  }
}

TEST(CpuBackend, RmsNormPlainWithF32AndF16Weight) {
  const int64_t e = 96, t = 13;
  const auto x = gaussian(sz(e * t), 2.0f, 31);
  const auto wf = gaussian(sz(e), 1.0f, 32);
  std::vector<uint8_t> w16(sz(e) * 2);
  ASSERT_TRUE(quant::quantize_row(kF16, wf, w16).ok());
  Graph g;
  NodeId xn = g.add_input(make_desc(kF32, e, t), "x");
  NodeId w32n = g.add_weight(make_desc(kF32, e), "w32");
  NodeId w16n = g.add_weight(make_desc(kF16, e), "w16");
  OpParams p;
  p.eps = 1e-5f;
  NodeId plain = add(g, OpKind::kRmsNorm, {xn}, p);
  NodeId a = add(g, OpKind::kRmsNorm, {xn, w32n}, p);
  NodeId c = add(g, OpKind::kRmsNorm, {a, w16n}, p);
  NodeId y = add(g, OpKind::kAdd, {c, plain});
  Bindings b;
  b.bind_input(xn, std::span<const float>(x));
  b.bind_weight(w32n, kF32, bytes_of(wf));
  b.bind_weight(w16n, kF16, w16);
  expect_matches_reference(g, b, plain, kExactTol, "rms_norm plain");
  expect_matches_reference(g, b, y, kExactTol, "rms_norm weighted chain");
}

TEST(CpuBackend, RopeBothModesWithFreqFactorsAndPartialDims) {
  const int64_t d = 64, nh = 3, t = 19;  // 19 tokens: three tasks of 8, 8 and 3
  const auto x = gaussian(sz(d * nh * t), 1.0f, 41);
  std::vector<int32_t> pos(sz(t));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(5 + 3 * i);
  for (auto mode : {graph::RopeMode::kNormal, graph::RopeMode::kNeox}) {
    for (int32_t n_dims : {0, 32}) {
      for (bool with_ff : {false, true}) {
        const int64_t nd = n_dims == 0 ? d : n_dims;
        std::vector<float> ff(sz(nd / 2));
        for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + 0.37f * static_cast<float>(i);
        Graph g;
        NodeId xn = g.add_input(make_desc(kF32, d, nh, t), "x");
        NodeId pn = g.add_input(make_desc(kI32, t), "pos");
        NodeId fn = g.add_input(make_desc(kF32, nd / 2), "freq_factors");
        OpParams p;
        p.rope.mode = mode;
        p.rope.n_dims = n_dims;
        p.rope.base = 500000.0f;
        p.rope.freq_scale = 0.5f;
        std::vector<NodeId> ins = {xn, pn};
        if (with_ff) ins.push_back(fn);
        NodeId y = add(g, OpKind::kRope, ins, p);
        Bindings b;
        b.bind_input(xn, std::span<const float>(x));
        b.bind_input(pn, std::span<const int32_t>(pos));
        b.bind_input(fn, std::span<const float>(ff));
        expect_matches_reference(g, b, y, kExactTol,
                                 std::string("rope ") +
                                     (mode == graph::RopeMode::kNeox ? "neox" : "normal") +
                                     " n_dims=" + std::to_string(n_dims) + (with_ff ? " ff" : ""));
      }
    }
  }
}

// Layers' RoPEs share one positions node: the backend computes each parameter set's cos / sin
// table once per run (Scratch::rope). A chain of RoPEs alternating two bases and two n_dims must
// still equal the reference, and a later run with other positions must not reuse the old tables.
TEST(CpuBackend, RopeChainSharingPositionsAcrossParametersAndRuns) {
  const int64_t d = 64, nh = 2, t = 11;
  const auto x = gaussian(sz(d * nh * t), 1.0f, 43);
  std::vector<int32_t> pos(sz(t));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
  Graph g;
  NodeId xn = g.add_input(make_desc(kF32, d, nh, t), "x");
  NodeId pn = g.add_input(make_desc(kI32, t), "pos");
  NodeId y = xn;
  for (int layer = 0; layer < 6; ++layer) {
    OpParams p;
    p.rope.mode = graph::RopeMode::kNeox;
    p.rope.base = layer % 2 == 0 ? 10000.0f : 1000000.0f;
    p.rope.n_dims = layer % 3 == 2 ? 32 : 0;
    y = add(g, OpKind::kRope, {y, pn}, p);
  }
  auto be = backend_with(3);
  ASSERT_NE(be, nullptr);
  for (int run = 0; run < 3; ++run) {
    if (run > 0) {
      for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(100 * run + 7 * i);
    }
    Bindings b;
    b.bind_input(xn, std::span<const float>(x));
    b.bind_input(pn, std::span<const int32_t>(pos));
    expect_same_bits_as_reference(*be, g, b, y, "run " + std::to_string(run));
  }
}

// Two frequency-factor nodes with the same positions and RoPE parameters in one run: the tables
// are told apart by node, not by the parameters alone.
TEST(CpuBackend, RopeTablesKeepFrequencyFactorNodesApart) {
  const int64_t d = 32, nh = 2, t = 7;
  const auto x = gaussian(sz(d * nh * t), 1.0f, 47);
  std::vector<int32_t> pos(sz(t));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(3 + 2 * i);
  std::vector<float> ff_a(sz(d / 2)), ff_b(sz(d / 2));
  for (size_t i = 0; i < ff_a.size(); ++i) {
    ff_a[i] = 1.0f + 0.25f * static_cast<float>(i);
    ff_b[i] = 8.0f - 0.25f * static_cast<float>(i);
  }
  Graph g;
  NodeId xn = g.add_input(make_desc(kF32, d, nh, t), "x");
  NodeId pn = g.add_input(make_desc(kI32, t), "pos");
  NodeId fa = g.add_input(make_desc(kF32, d / 2), "ff_a");
  NodeId fb = g.add_input(make_desc(kF32, d / 2), "ff_b");
  NodeId y = xn;
  for (NodeId f : {fa, fb, fa, fb}) y = add(g, OpKind::kRope, {y, pn, f});
  y = add(g, OpKind::kRope, {y, pn});  // and none
  Bindings b;
  b.bind_input(xn, std::span<const float>(x));
  b.bind_input(pn, std::span<const int32_t>(pos));
  b.bind_input(fa, std::span<const float>(ff_a));
  b.bind_input(fb, std::span<const float>(ff_b));
  auto be = backend_with(3);
  ASSERT_NE(be, nullptr);
  expect_same_bits_as_reference(*be, g, b, y, "two frequency-factor nodes");
}

}  // namespace
}  // namespace geniex::backends
