// Executes a whole Graph with the scalar reference ops (ref_ops.h), node by node in order.
#pragma once

#include <cstdint>
#include <functional>
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
  /// Persistent state (e.g. a KV cache layer): raw bytes of the node's dtype, read and written
  /// in place by CacheWrite. The bytes may be longer than the node needs (a cache with room to
  /// grow): only the first ne-worth of rows is used.
  void bind_state(NodeId id, GgmlType type, std::span<uint8_t> bytes) {
    states_[id] = State{type, bytes};
  }
  /// Where to copy node `id`'s F32 result (any node, usually an op).
  void bind_output(NodeId id, std::span<float> data) { out_[id] = data; }
  /// Runs `fn` right before op `id` executes (e.g. to page a layer's KV cache in and fill the
  /// I32 inputs that address it: bound spans are read when their consumers run). A failing hook
  /// fails the run.
  void add_hook(NodeId id, std::function<Status()> fn) { hooks_[id] = std::move(fn); }

 private:
  friend Status run_reference(const Graph& graph, const Bindings& bindings);
  friend class BindingsAccess;
  struct Weight {
    GgmlType type;
    std::span<const uint8_t> bytes;
  };
  struct State {
    GgmlType type;
    std::span<uint8_t> bytes;
  };
  std::unordered_map<NodeId, std::span<const float>> f32_;
  std::unordered_map<NodeId, std::span<const int32_t>> i32_;
  std::unordered_map<NodeId, Weight> weights_;
  std::unordered_map<NodeId, std::span<float>> out_;
  std::unordered_map<NodeId, State> states_;
  std::unordered_map<NodeId, std::function<Status()>> hooks_;
};

/// Read access to a Bindings for executors other than run_reference (backends).
class BindingsAccess {
 public:
  explicit BindingsAccess(const Bindings& b) : b_(b) {}
  [[nodiscard]] const auto& f32_inputs() const { return b_.f32_; }
  [[nodiscard]] const auto& i32_inputs() const { return b_.i32_; }
  [[nodiscard]] const auto& weights() const { return b_.weights_; }
  [[nodiscard]] const auto& outputs() const { return b_.out_; }
  [[nodiscard]] const auto& states() const { return b_.states_; }
  /// Runs node id's hook, if any.
  [[nodiscard]] Status run_hook(NodeId id) const {
    auto it = b_.hooks_.find(id);
    return it == b_.hooks_.end() ? Status{} : it->second();
  }
  [[nodiscard]] bool has_hooks() const { return !b_.hooks_.empty(); }
  /// Whether node id has a hook.
  [[nodiscard]] bool has_hook(NodeId id) const { return b_.hooks_.count(id) != 0; }

 private:
  const Bindings& b_;
};

/// Runs every op of `graph` with the reference implementations and copies each bound output.
/// Missing or wrongly sized bindings are kInvalidArgument naming the node.
Status run_reference(const Graph& graph, const Bindings& bindings);

}  // namespace geniex::graph
