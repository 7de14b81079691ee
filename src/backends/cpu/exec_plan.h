// Memory plan of a graph run on the CPU: every op result gets an offset in one F32 arena,
// chosen by liveness (a buffer is reused once its last reader has run); reshapes alias their
// input and cache writes alias their state, so neither costs memory.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace geniex::backends::cpu {

struct ExecPlan {
  static constexpr int64_t kNoBuffer = -1;
  /// Per node: the node whose buffer holds its value (itself, or what it aliases).
  std::vector<graph::NodeId> root;
  /// Per node: offset in floats into the arena, kNoBuffer for nodes without an arena buffer.
  std::vector<int64_t> offset;
  /// Floats the arena must hold.
  int64_t arena_floats = 0;
};

/// Plans `graph`. Every F32 op result that is not an alias gets a buffer, live from its op to
/// its last reader (nodes in `keep` live to the end). `alias` (empty, or one entry per node)
/// makes node i share the buffer of node alias[i] where alias[i] != i (ops a matmul's epilogue
/// computes in place: matmul_fusion.h).
ExecPlan plan_graph(const graph::Graph& graph, const std::vector<bool>& keep,
                    const std::vector<graph::NodeId>& alias = {});

}  // namespace geniex::backends::cpu
