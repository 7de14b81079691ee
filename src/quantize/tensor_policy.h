// Which type each tensor of a model gets for a quantization file type: llama.cpp's
// llama_tensor_get_type (llama-quant.cpp) rule for rule — which tensors may be quantized at all
// (2-D+ weights, not norms, not the small conv/routing tables), the _S/_M/_L mixtures
// (attn_v / ffn_down / attn_output bumps by layer), output.weight and tied token embeddings at
// Q6_K, and the fallbacks for rows that do not divide the block size. Also the tensor order
// llama-quantize writes (by layer, then name).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "quantize/file_type.h"

namespace geniex::quantize {

/// The hyper-parameters the rules look at (read from the GGUF metadata).
struct ModelShape {
  std::string arch;
  int n_layer = 0;    ///< {arch}.block_count
  int n_head = 0;     ///< {arch}.attention.head_count (layer 0)
  int n_head_kv = 0;  ///< {arch}.attention.head_count_kv (layer 0; n_head when absent)
  int n_expert = 0;   ///< {arch}.expert_count
};

struct PolicyOptions {
  bool pure = false;                        ///< --pure: no mixtures, no output/embd bumps
  bool quantize_output = true;              ///< false: --leave-output-tensor
  std::optional<GgmlType> output_type;      ///< --output-tensor-type
  std::optional<GgmlType> token_embd_type;  ///< --token-embedding-type
  bool has_imatrix = false;
};

/// One tensor as the policy sees it.
struct TensorDesc {
  std::string name;
  uint32_t n_dims = 0;
  std::array<uint64_t, 4> ne{1, 1, 1, 1};
  GgmlType type = GgmlType::kF32;
};

struct TensorChoice {
  GgmlType type = GgmlType::kF32;  ///< the type to write
  bool allows_quantization = false;
  bool fallback = false;  ///< the mixture's type did not fit the row length
};

/// ggml_n_dims: the number of dimensions up to the last one above 1 (at least 1).
uint32_t effective_dims(const TensorDesc& t);

/// The order llama-quantize writes tensors in: non-layer tensors first, then by layer number
/// ("blk.N."), then by name. Returns indices into `tensors`.
std::vector<size_t> llama_tensor_order(const std::vector<TensorDesc>& tensors);

/// Chooses every tensor's type; `tensors` must already be in llama_tensor_order (the layer
/// counters advance in that order).
std::vector<TensorChoice> choose_types(const std::vector<TensorDesc>& tensors,
                                       const ModelShape& shape, const FileTypeInfo& ftype,
                                       const PolicyOptions& opts);

}  // namespace geniex::quantize
