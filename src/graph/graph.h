// The graph: inputs, weights and ops in topological order (an op can only name nodes that
// already exist), with shape inference and validation at construction time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/op.h"

namespace geniex::graph {

/// Index of a node in its graph.
using NodeId = uint32_t;

/// How a node gets its value.
enum class NodeRole : uint8_t {
  kInput,   ///< activations / positions bound at run time (F32 or I32)
  kWeight,  ///< raw GGUF tensor bytes bound at run time (any type)
  kOp,      ///< computed from its inputs
  kState,   ///< persistent mutable storage bound at run time (a KV cache layer: F32/F16/Q8_0/Q4_0)
};

/// What a placement stage holds, for the layer limit (Scheduler::set_offload_layers).
enum class StageKind : uint8_t {
  kOther,   ///< not part of a layered model (e.g. a vision encoder's stages)
  kInput,   ///< the token embedding
  kLayer,   ///< one decoder / encoder layer (Graph::stage_layer names which)
  kOutput,  ///< the final norm and the output head
};

/// One node. For kInput/kWeight nodes `op`, `inputs` and `params` are unused.
struct Node {
  NodeRole role = NodeRole::kInput;
  OpKind op = OpKind::kAdd;
  std::vector<NodeId> inputs;
  OpParams params;
  TensorDesc desc;  ///< for ops: the inferred output descriptor (always F32)
  std::string name;
  int32_t stage = 0;  ///< the placement stage it belongs to (Graph::begin_stage), 0 by default
};

/// A growing DAG. Nodes are numbered in creation order, which is a valid execution order.
class Graph {
 public:
  Graph();
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;

  /// Identifies this graph's structure for caches (placement, memory plans): unique per graph
  /// object and changed by every add_*, so equal keys mean the same nodes.
  [[nodiscard]] uint64_t structure_key() const { return uid_ * 1000003u + nodes_.size(); }

  /// Adds a run-time input (activations F32, positions / token ids I32).
  NodeId add_input(const TensorDesc& desc, std::string name);
  /// Adds a weight (raw bytes of `desc.dtype`, e.g. a GGUF tensor).
  NodeId add_weight(const TensorDesc& desc, std::string name);
  /// Adds persistent state (F32, F16, Q8_0 or Q4_0), e.g. one layer's K or V cache
  /// [head_dim, n_kv_head, S]. Only kCacheWrite writes it; kAttention may read it (or
  /// kCacheWrite's result) as k / v.
  NodeId add_state(const TensorDesc& desc, std::string name);
  /// Adds an op after checking input count, dtypes and shapes; returns kInvalidArgument (or
  /// kUnimplemented for a weight type the references cannot handle) naming the op and shapes.
  Result<NodeId> add_op(OpKind kind, const std::vector<NodeId>& inputs, const OpParams& params = {},
                        std::string name = {});

  /// Nodes added from now on belong to stage `id` (>= 0), labelled `label` (e.g. "layers 0-3",
  /// "lm_head") for placement logs. Stages group nodes the scheduler may place on one unit;
  /// a graph that never calls this is one stage, 0.
  /// `kind` (and, for kLayer, the layer's index `layer`) tells the layer limit what it holds.
  void begin_stage(int32_t id, std::string label, StageKind kind = StageKind::kOther,
                   int32_t layer = -1);
  /// Label of stage `id` ("" when never labelled).
  [[nodiscard]] std::string stage_label(int32_t id) const;
  /// Kind of stage `id` (kOther when never given).
  [[nodiscard]] StageKind stage_kind(int32_t id) const;
  /// Layer index of a kLayer stage `id`; -1 for other stages.
  [[nodiscard]] int32_t stage_layer(int32_t id) const;
  /// Number of layers the kLayer stages hold (largest layer index + 1; 0 when none).
  [[nodiscard]] int32_t n_layer_stages() const;
  /// The stage nodes are added to now.
  [[nodiscard]] int32_t current_stage() const { return stage_; }
  /// Number of distinct stages (max stage id + 1).
  [[nodiscard]] int32_t n_stages() const { return n_stages_; }

  /// Tokens of the batch this graph processes (rows of its activations; 0: not a token batch).
  /// Static-shape units (NPUs) compile per token count and may accept only some counts.
  void set_batch_tokens(int32_t n) { batch_tokens_ = n; }
  [[nodiscard]] int32_t batch_tokens() const { return batch_tokens_; }

  /// The node `id` (must be < size()).
  [[nodiscard]] const Node& node(NodeId id) const { return nodes_[id]; }
  /// Number of nodes.
  [[nodiscard]] size_t size() const { return nodes_.size(); }
  /// All nodes in execution order.
  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }

 private:
  NodeId push(Node node);
  NodeId add_leaf(NodeRole role, const TensorDesc& desc, std::string name);
  std::vector<Node> nodes_;
  uint64_t uid_ = 0;
  int32_t stage_ = 0;
  int32_t n_stages_ = 1;
  int32_t batch_tokens_ = 0;
  std::vector<std::string> stage_labels_;
  std::vector<StageKind> stage_kinds_;
  std::vector<int32_t> stage_layers_;
};

/// Output descriptor of `kind` applied to `inputs`, or the Status explaining why not.
Result<TensorDesc> infer_shape(OpKind kind, const std::vector<TensorDesc>& inputs,
                               const OpParams& params);

}  // namespace geniex::graph
