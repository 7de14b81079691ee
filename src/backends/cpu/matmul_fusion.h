// Element-wise ops that the CPU backend folds into the matmul before them (an epilogue applied to
// each output tile while it is still in cache) instead of a pass of their own over memory:
//   y = matmul(W, x)  [-> y + bias]  [-> gelu(y) | gelu_erf(y)]  [-> y + r]
// a bias add (a [ne0] weight over every row), an activation, and an add of a same-shape operand
// (the residual stream). Each folded op computes what its own op computes, element by element in
// the same order, so the results are the same bits; the folded nodes become aliases of the
// matmul's buffer (exec_plan's `alias`).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace geniex::backends::cpu {

/// What a matmul's epilogue computes, as pointers into the run's values (cpu_ops.h).
struct MatmulEpilogue {
  enum class Act : uint8_t { kNone, kGelu, kGeluErf };
  const float* bias = nullptr;   ///< [n]: y[c, r] = y[c, r] + bias[r]
  Act act = Act::kNone;          ///< then y = act(y) (gelu_rows / gelu_erf_rows)
  const float* resid = nullptr;  ///< [m, n]: then y[c, r] = resid[c, r] + y[c, r]
  [[nodiscard]] bool empty() const {
    return bias == nullptr && act == Act::kNone && resid == nullptr;
  }
};

/// Applies `e` to output rows [c0, c0 + nc) x columns [r0, r0 + nr) of y (row stride n).
void apply_epilogue(const MatmulEpilogue& e, float* y, int64_t n, int64_t r0, int64_t nr,
                    int64_t c0, int64_t nc);

/// One matmul's folded ops, as node ids (kNone where absent).
struct MatmulChain {
  static constexpr graph::NodeId kNone = ~graph::NodeId{0};
  graph::NodeId bias = kNone;  ///< the bias weight
  MatmulEpilogue::Act act = MatmulEpilogue::Act::kNone;
  graph::NodeId resid = kNone;  ///< the other operand of the residual add
  graph::NodeId last = kNone;   ///< the chain's last folded node (kNone: nothing folded)
};

struct MatmulFusions {
  std::vector<MatmulChain> chain;   ///< per node (meaningful for matmuls)
  std::vector<graph::NodeId> into;  ///< per node: the matmul that computes it, or itself
};

/// Finds the chains of `g`. A node is folded only when it is the single reader of the node before
/// it, neither is in `keep` (outputs), and the residual operand is computed before the matmul
/// (so it is ready when the epilogue runs).
MatmulFusions find_matmul_fusions(const graph::Graph& g, const std::vector<bool>& keep);

}  // namespace geniex::backends::cpu
