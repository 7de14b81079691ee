// Executes a whole Graph with the scalar reference ops (ref_ops.h), node by node in order.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "core/dtype.h"
#include "core/status.h"
#include "graph/graph.h"

namespace geniex::graph {

/// Host buffers for a run: borrowed, not owned; they must outlive run_reference.
class Bindings {
 public:
  /// An F32 input (activations).
  void bind_input(NodeId id, std::span<const float> data) { f32_[id] = data; }
  /// An I32 input (token ids, positions).
  void bind_input(NodeId id, std::span<const int32_t> data) { i32_[id] = data; }
  /// A weight: raw bytes stored as `type` (must equal the node's dtype), e.g. a GGUF tensor.
  void bind_weight(NodeId id, GgmlType type, std::span<const uint8_t> bytes) {
    weights_[id] = Weight{type, bytes};
  }
  /// Where to copy node `id`'s F32 result (any node, usually an op).
  void bind_output(NodeId id, std::span<float> data) { out_[id] = data; }

 private:
  friend Status run_reference(const Graph& graph, const Bindings& bindings);
  struct Weight {
    GgmlType type;
    std::span<const uint8_t> bytes;
  };
  std::unordered_map<NodeId, std::span<const float>> f32_;
  std::unordered_map<NodeId, std::span<const int32_t>> i32_;
  std::unordered_map<NodeId, Weight> weights_;
  std::unordered_map<NodeId, std::span<float>> out_;
};

/// Runs every op of `graph` with the reference implementations and copies each bound output.
/// Missing or wrongly sized bindings are kInvalidArgument naming the node.
Status run_reference(const Graph& graph, const Bindings& bindings);

}  // namespace geniex::graph
