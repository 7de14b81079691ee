// StagePlan: a graph cut into segments — runs of consecutive placement stages that one backend
// runs — each a self-contained sub-graph whose boundary values travel through host buffers.
//
// A segment's sub-graph holds copies of the parent's leaves it uses (inputs, weights, states:
// bound to the same host memory at run time) and of its ops; an op result that a later segment
// reads becomes an F32 input there ("import") and a bound output here ("export"), so copies
// happen only at stage boundaries. Hooks of the parent's ops run in the segment holding the op.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/run_reference.h"

namespace geniex::runtime {

/// One run of stages [first_stage, last_stage] placed on `unit`.
struct Segment {
  int32_t first_stage = 0;
  int32_t last_stage = 0;
  backends::Backend* unit = nullptr;
  graph::Graph sub;
  /// Parent node of each sub-graph node (leaves and ops; imports map to the producing op).
  std::vector<graph::NodeId> parent_of;
  /// Sub-graph inputs standing for another segment's op results: (sub input, boundary index).
  std::vector<std::pair<graph::NodeId, int32_t>> imports;
  /// Sub-graph ops another segment reads: (sub op, boundary index).
  std::vector<std::pair<graph::NodeId, int32_t>> exports;
  /// Segments whose exports this one imports (indices into StagePlan::segments).
  std::vector<int32_t> deps;
};

/// A graph cut by a per-stage assignment of units.
class StagePlan {
 public:
  /// Cuts `graph` where `unit_of_stage[s]` changes between consecutive stages (every stage with
  /// ops must have a unit). kInvalidArgument when a value crossing a cut is not F32 (e.g. a
  /// cache alias: K/V state and its attention must share a segment).
  static Result<StagePlan> build(const graph::Graph& graph,
                                 const std::vector<backends::Backend*>& unit_of_stage);

  /// The segments in execution order (a topological order of their deps).
  [[nodiscard]] const std::vector<Segment>& segments() const { return segments_; }
  /// Host bytes of all boundary buffers (allocated once, reused by every run).
  [[nodiscard]] int64_t boundary_bytes() const;
  /// Floats one run copies across boundaries, per segment: (bytes in, bytes out).
  [[nodiscard]] std::pair<int64_t, int64_t> copy_bytes(size_t segment) const;

  /// Bindings of segment `i` for one run of the parent with `parent`: leaves bound to the same
  /// host memory, boundary buffers for imports/exports, the parent's bound outputs and hooks.
  /// The result borrows from `parent`'s buffers and from this plan; build it per run. When
  /// `hook_failed` is given, a failing parent hook also sets it (the caller's error, not the
  /// unit's).
  graph::Bindings bindings_for(size_t i, const graph::Bindings& parent,
                               bool* hook_failed = nullptr);

  /// `parent`'s hook of node `p`, setting `*hook_failed` (when given) if it fails.
  static std::function<Status()> forward_hook(const graph::Bindings& parent, graph::NodeId p,
                                              bool* hook_failed);

 private:
  std::vector<Segment> segments_;
  /// Parent op of each boundary buffer, and the buffer (one per crossing value).
  std::vector<graph::NodeId> boundary_node_;
  std::vector<std::vector<float>> boundary_;
};

}  // namespace geniex::runtime
