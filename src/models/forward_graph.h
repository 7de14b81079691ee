// The full-sequence forward graph of a text model (llama, qwen2, qwen3, gemma3): token ids and
// positions in, logits out, built on the graph IR from a ModelConfig and its bound weights.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "graph/graph.h"
#include "graph/run_reference.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace geniex::models {

/// A weight node and the GGUF tensor whose raw bytes it takes.
struct WeightBinding {
  graph::NodeId node = 0;
  const gguf::TensorInfo* tensor = nullptr;
};

/// A forward graph over `n_tokens` tokens (positions are an input, so any offset works, but
/// attention only sees this batch: no KV cache).
struct ForwardGraph {
  graph::Graph graph;
  graph::NodeId token_ids = 0;  ///< input I32 [n_tokens]
  graph::NodeId positions = 0;  ///< input I32 [n_tokens]
  graph::NodeId logits = 0;     ///< F32 [n_vocab, n_tokens] (row-major by token)
  int32_t n_tokens = 0;
  uint32_t n_vocab = 0;
  /// Every weight node, once per distinct tensor (tied embeddings share one node).
  std::vector<WeightBinding> weights;
};

/// Builds the graph of `config` (ARCH.md §1–4). Fails on n_tokens < 1 or a config/weights
/// combination the graph IR rejects (the Status names the op and shapes).
Result<ForwardGraph> build_forward_graph(const ModelConfig& config, const ModelWeights& weights,
                                         int32_t n_tokens);

/// Binds every weight node of `fg` to its tensor's raw bytes (borrowed from the GgufFile).
void bind_forward_weights(const ForwardGraph& fg, graph::Bindings& bindings);

/// Loads config and weights from `file`, builds the graph for ids.size() tokens at positions
/// 0..T-1, runs the reference ops and returns the logits, T × n_vocab row-major by token.
/// Empty ids or an id outside [0, n_vocab) → kInvalidArgument.
Result<std::vector<float>> run_forward_reference(const gguf::GgufFile& file,
                                                 std::span<const int32_t> ids);

}  // namespace geniex::models
