// Hugging Face -> GGUF tensor names for the decoder-only families (gguf-py's tensor_mapping
// entries that llama, qwen2, qwen3 and mistral checkpoints use).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace geniex::convert {

/// One entry of a Hugging Face -> GGUF name table (a whole name, or the part after a prefix).
struct Rename {
  std::string_view hf;
  std::string_view gguf;
};

/// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight"; nullopt for tensors
/// llama.cpp drops (rotary_emb.inv_freq, attention masks). An unknown name, or a layer index
/// not below `n_block`, is kInvalidArgument naming the tensor.
Result<std::optional<std::string>> map_decoder_tensor_name(std::string_view hf_name,
                                                           uint64_t n_block);

/// A layer tensor's index and the rest of its name ("model.layers.3.mlp.up_proj.weight" ->
/// {3, "mlp.up_proj.weight"}); nullopt for names outside "model.layers.N."; kInvalidArgument
/// when N is not below `n_block`.
struct LayerName {
  uint64_t bid = 0;
  std::string_view tail;
};
Result<std::optional<LayerName>> split_layer_name(std::string_view hf_name, uint64_t n_block);

}  // namespace geniex::convert
