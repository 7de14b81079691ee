// BERT-family encoders as llama.cpp's converter writes them (`general.architecture` = bert):
// token + position + token-type (row 0) embeddings, LayerNorm, then post-norm layers of
// bidirectional multi-head attention and an exact-GELU FFN. The graph takes a batch of several
// sequences (each token attends to the tokens of its own sequence) and ends at the last layer's
// output, one row per token; pooling happens outside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "graph/graph.h"
#include "graph/run_reference.h"
#include "models/forward_graph.h"

namespace geniex::models {

struct BertConfig {
  std::string name;             ///< general.name
  uint32_t n_vocab = 0;         ///< rows of token_embd
  uint32_t n_embd = 0;          ///< bert.embedding_length
  uint32_t n_layer = 0;         ///< bert.block_count
  uint32_t n_head = 0;          ///< bert.attention.head_count
  uint32_t n_ff = 0;            ///< bert.feed_forward_length
  uint32_t context_length = 0;  ///< bert.context_length (rows of position_embd)
  float eps = 1e-12f;           ///< bert.attention.layer_norm_epsilon
  int32_t pooling_type = -1;    ///< bert.pooling_type (llama.cpp's enum), -1: absent
};

struct BertLayerWeights {
  const gguf::TensorInfo *q = nullptr, *q_b = nullptr, *k = nullptr, *k_b = nullptr;
  const gguf::TensorInfo *v = nullptr, *v_b = nullptr, *o = nullptr, *o_b = nullptr;
  const gguf::TensorInfo *attn_norm = nullptr, *attn_norm_b = nullptr;
  const gguf::TensorInfo *up = nullptr, *up_b = nullptr, *down = nullptr, *down_b = nullptr;
  const gguf::TensorInfo *out_norm = nullptr, *out_norm_b = nullptr;
};

struct BertWeights {
  const gguf::TensorInfo* tok_embd = nullptr;
  const gguf::TensorInfo* type_embd = nullptr;  ///< optional: row 0 is added to every token
  const gguf::TensorInfo* pos_embd = nullptr;
  const gguf::TensorInfo *embd_norm = nullptr, *embd_norm_b = nullptr;
  std::vector<BertLayerWeights> layers;
};

/// Whether `file` is an encoder this module runs (`general.architecture` = bert).
bool is_bert(const gguf::GgufFile& file);
Result<BertConfig> load_bert_config(const gguf::GgufFile& file);
Result<BertWeights> bind_bert_weights(const gguf::GgufFile& file, const BertConfig& config);

/// The encoder over `n_tokens` tokens of one or more sequences. Inputs: token_ids, positions
/// (each sequence from 0), seq_rows (0 .. n_tokens-1) and seq_seg ([begin, end) of each token's
/// sequence). Output `hidden` [n_embd, n_tokens].
struct BertGraph {
  graph::Graph graph;
  graph::NodeId token_ids = 0, positions = 0, type_ids = 0, seq_rows = 0, seq_seg = 0;
  graph::NodeId hidden = 0;
  int32_t n_tokens = 0;
  std::vector<WeightBinding> weights;
};
Result<BertGraph> build_bert_graph(const BertConfig& config, const BertWeights& weights,
                                   int32_t n_tokens);
void bind_bert_weights(const BertGraph& bg, graph::Bindings& bindings);

}  // namespace geniex::models
