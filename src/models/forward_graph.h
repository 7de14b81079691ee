// The full-sequence forward graph of a text model (llama, qwen2, qwen3, gemma3, lfm2): token ids
// and positions in, logits out, built on the graph IR from a ModelConfig and its bound weights.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "graph/graph.h"
#include "graph/run_reference.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace geniex::models {

/// Marks a per-layer node a layer does not have (K/V inputs of a conv layer, conv state of an
/// attention layer).
inline constexpr graph::NodeId kNoNode = 0xFFFFFFFFu;

/// A weight node and the GGUF tensor whose raw bytes it takes: the whole tensor, or (n_rows >
/// 0) rows [row_begin, row_begin + n_rows) of it (lfm2's in_proj is three matrices in one).
struct WeightBinding {
  graph::NodeId node = 0;
  const gguf::TensorInfo* tensor = nullptr;
  uint64_t row_begin = 0;
  uint64_t n_rows = 0;
};

/// llama.cpp's rotation around a quantized KV cache (llama-kv-cache.cpp, attn_rot_k and
/// attn_rot_v): with a Q8_0 / Q4_0 cache, Q and K are rotated after RoPE by Walsh-Hadamard blocks
/// of `k` elements (the largest power of two dividing head_dim_k), V by blocks of `v` = 64 before
/// it is cached, and the attention output back by the same (H is its own inverse). Q.K and the
/// weighted sum of V are unchanged in exact arithmetic; the rotation spreads outliers across a
/// head before the 8- and 4-bit rounding. Only for head sizes that are multiples of 64; 0: none.
struct KvRotation {
  int32_t k = 0;
  int32_t v = 0;
  [[nodiscard]] bool any() const { return k != 0 || v != 0; }
};
KvRotation kv_rotation(const ModelConfig& config, GgmlType kv_type);

/// What one forward step computes.
struct ForwardSpec {
  int32_t n_tokens = 1;  ///< new tokens in this step
  /// Empty: no KV cache — attention sees only this batch. Else the paged cache, per layer: every
  /// layer writes the batch's K/V into its state (nodes [head_dim, n_kv_head, kv_state_rows[il]],
  /// type `kv_type`) at rows `kv_slots[il]`, and attends over a list of kv_list[il] entries:
  /// state rows `kv_rows[il]` holding positions `kv_pos[il]` (-1 = padding, never read).
  std::vector<int32_t> kv_list;
  std::vector<int64_t> kv_state_rows;  ///< per layer (with kv_list)
  GgmlType kv_type = GgmlType::kF16;
  /// The rotation around the cache; unset: kv_rotation(config, kv_type), llama.cpp's rule.
  std::optional<KvRotation> kv_rotation;
  /// With kv_list: the batch holds several sequences; per layer, input `kv_seg` [2, n_tokens]
  /// gives each token the [begin, end) range of the attended list that belongs to its sequence.
  bool segments = false;
  /// With kv_list, on a model with short-conv layers (lfm2): the step's sequences own state
  /// slots 0..conv_slots-1. Input `conv_seq` [n_tokens] I32 gives each token's slot (-1:
  /// padding); each conv layer reads input conv_state [n_embd, conv_taps - 1, conv_slots] F32
  /// and yields node conv_state_out (the same shape: the states after this step). kv_list and
  /// kv_state_rows entries of conv layers are ignored. Without kv_list conv layers start from a
  /// zero state (one sequence).
  int32_t conv_slots = 1;
  /// < 0: logits for every token. Else logits for `n_outputs` rows picked by input
  /// `output_rows` (e.g. just the last token while generating).
  int32_t n_outputs = -1;
  /// Embeddings given instead of some tokens' (images of a vision-language model): inputs
  /// `embd_keep` [1, n_tokens] F32 (1: the token's own embedding, 0: replaced) and
  /// `embd_inject` [n_embd, n_tokens] F32 (the replacement rows, 0 elsewhere); the stream
  /// starts as embedding * keep + inject, after any embedding scale (transformers scatters
  /// image features into inputs_embeds, which already carry it).
  bool inject = false;
  /// Embeddings: the graph ends at the final norm; node `hidden` [n_embd, n_outputs] is its
  /// output and there is no output head (`logits` is `hidden`).
  bool hidden_only = false;
  /// Without kv_list: the batch holds several sequences, each attending only to its own tokens:
  /// inputs `seq_rows` [n_tokens] I32 (0 .. n_tokens-1) and `seq_seg` [2, n_tokens] I32 (each
  /// token's [begin, end) batch rows). Models with short-conv layers (lfm2) cannot: one sequence.
  bool batch_segments = false;
  /// Attention sees every key of the sequence, not only earlier positions (embedding models).
  bool bidirectional = false;
};

/// A forward graph over `n_tokens` tokens; positions are an input, so any offset works.
struct ForwardGraph {
  graph::Graph graph;
  graph::NodeId token_ids = 0;          ///< input I32 [n_tokens]
  graph::NodeId positions = 0;          ///< input I32 [n_tokens]
  graph::NodeId logits = 0;             ///< F32 [n_vocab, n_outputs] (row-major by token)
  graph::NodeId output_rows = 0;        ///< input I32 [n_outputs] when n_outputs >= 0
  graph::NodeId embd_keep = kNoNode;    ///< with ForwardSpec::inject: input F32 [1, n_tokens]
  graph::NodeId embd_inject = kNoNode;  ///< with ForwardSpec::inject: input F32 [n_embd, n_tokens]
  graph::NodeId hidden = kNoNode;       ///< with ForwardSpec::hidden_only: F32 [n_embd, n_outputs]
  graph::NodeId seq_rows = kNoNode;     ///< with ForwardSpec::batch_segments: input I32 [n_tokens]
  graph::NodeId seq_seg = kNoNode;  ///< with ForwardSpec::batch_segments: input I32 [2, n_tokens]
  /// Per layer (with a KV cache): inputs I32 kv_slots [n_tokens] (state row of each new token),
  /// kv_rows and kv_pos [kv_list[il]], kv_seg [2, n_tokens] (with spec.segments); the K and V
  /// state nodes; the layer's first CacheWrite (run hooks that page the layer's cache in there).
  std::vector<graph::NodeId> kv_slots, kv_rows, kv_pos, kv_seg;
  std::vector<graph::NodeId> k_cache, v_cache;
  std::vector<graph::NodeId> cache_write;
  /// lfm2 with a KV cache (see ForwardSpec::conv_slots): input conv_seq, and per layer the
  /// conv_state input, the conv_state_out node and the conv input u = B * x [n_embd, n_tokens]
  /// (bind it as an output to get the state after any token: the last conv_taps - 1 columns of
  /// the slot's state ++ its tokens' u) (kNoNode on attention layers; the K/V nodes above are
  /// kNoNode on conv layers).
  graph::NodeId conv_seq = kNoNode;
  std::vector<graph::NodeId> conv_state, conv_state_out, conv_u;
  KvRotation kv_rotation;      ///< the rotation around the cache (kv_rotation(config, kv_type))
  bool bidirectional = false;  ///< ForwardSpec::bidirectional
  int32_t n_tokens = 0;
  int32_t n_outputs = 0;  ///< rows of `logits`
  uint32_t n_vocab = 0;
  /// Every weight node, once per distinct tensor (tied embeddings share one node).
  std::vector<WeightBinding> weights;
};

/// Builds the graph of `config` (ARCH.md §1–4). Fails on n_tokens < 1 or a config/weights
/// combination the graph IR rejects (the Status names the op and shapes).
Result<ForwardGraph> build_forward_graph(const ModelConfig& config, const ModelWeights& weights,
                                         int32_t n_tokens);
/// The same with a KV cache and/or selected output rows (see ForwardSpec).
Result<ForwardGraph> build_forward_graph(const ModelConfig& config, const ModelWeights& weights,
                                         const ForwardSpec& spec);

/// Binds every weight node of `fg` to its tensor's raw bytes (borrowed from the GgufFile).
void bind_forward_weights(const ForwardGraph& fg, graph::Bindings& bindings);

/// Loads config and weights from `file`, builds the graph for ids.size() tokens at positions
/// 0..T-1, runs the reference ops and returns the logits, T × n_vocab row-major by token.
/// Empty ids or an id outside [0, n_vocab) → kInvalidArgument.
Result<std::vector<float>> run_forward_reference(const gguf::GgufFile& file,
                                                 std::span<const int32_t> ids);

}  // namespace geniex::models
