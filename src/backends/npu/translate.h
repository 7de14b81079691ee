// Translation of a GenieX graph into the plugin ABI's C description (geniex_npu_graph): op kinds,
// parameters, tensors, and the weights' host pointers taken from the bindings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "geniex/npu_plugin.h"
#include "graph/graph.h"
#include "graph/run_reference.h"

namespace geniex::backends::npu {

/// The ABI kind of a graph op kind.
geniex_npu_op_kind to_npu_kind(graph::OpKind kind);

/// The GGUF type id of op `id`'s typed input, the one caps masks are about: MatMul / Embedding
/// the weight, Attention k, CacheWrite the state; F32 (0) for the other kinds.
uint32_t typed_input_dtype(const graph::Graph& g, graph::NodeId id);

/// A geniex_npu_graph together with the storage its pointers point into.
struct NpuGraphDesc {
  std::vector<geniex_npu_tensor> tensors;
  std::vector<geniex_npu_op> ops;
  std::vector<uint32_t> outputs;
  std::vector<const void*> weight_ptrs;  ///< host pointer per weight node, in node order
  geniex_npu_graph graph{};              ///< points into the vectors above (call seal())

  /// Sets `graph`'s pointers and counts from the vectors (after any change to them).
  void seal();
};

/// Describes `g` for compile: every node becomes a tensor (names borrowed from `g`), every op an
/// op, weights point at their bound bytes (checked for type and size). `outputs` are the node
/// ids whose F32 values are wanted.
Result<NpuGraphDesc> translate_graph(const graph::Graph& g, const graph::BindingsAccess& b,
                                     const std::vector<graph::NodeId>& outputs);

}  // namespace geniex::backends::npu
