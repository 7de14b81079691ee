// Embedder: runs embedding requests — token lists in, pooled (optionally normalised) vectors out.
// Inputs are packed into batches of up to n_batch tokens, several sequences per forward pass
// (each attends only to its own tokens); a pass's token count is rounded up to a multiple of 32
// with a padding sequence, so a few cached graphs serve most batches. The graph is a decoder's
// forward graph cut at the final norm (models::ForwardSpec::hidden_only) or a BERT encoder.
// Models with recurrent state (lfm2) run one input per pass. Pooling runs on the host.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "geniex/geniex.hpp"
#include "gguf/gguf_reader.h"
#include "models/bert_model.h"
#include "models/model_config.h"
#include "models/model_weights.h"
#include "runtime/scheduler.h"

namespace geniex::engine {

/// llama.cpp's pooling_type values (0 none, 1 mean, 2 cls, 3 last) -> ours; others: nullopt.
std::optional<Pooling> pooling_from_gguf(int64_t value);
/// The pooling `<arch>.pooling_type` of `file` declares (mean when absent or unknown).
Pooling declared_pooling(const gguf::GgufFile& file);

class Embedder {
 public:
  /// A decoder's final hidden states (borrowed config and weights must outlive it). An
  /// EmbeddingGemma file (`gemma-embedding`) attends bidirectionally and applies its dense
  /// projections (dense_2, dense_3: sentence-transformers' Dense modules) after pooling.
  static Result<std::unique_ptr<Embedder>> for_decoder(const models::ModelConfig& config,
                                                       const models::ModelWeights& weights,
                                                       const gguf::GgufFile& file);
  Embedder(const models::ModelConfig& config, const models::ModelWeights& weights,
           Pooling declared);
  /// A BERT encoder (borrows the file's tensors).
  Embedder(models::BertConfig config, models::BertWeights weights, Pooling declared);
  ~Embedder();

  /// Vectors of `inputs` (each non-empty, ids checked by the caller, at most max_tokens()).
  /// `pooling` must not be kModel. Runs on `scheduler` (the caller keeps other users away).
  Result<Embeddings> run(std::span<const std::vector<int32_t>> inputs, Pooling pooling,
                         bool normalize, int32_t dimensions, runtime::Scheduler& scheduler,
                         int32_t n_batch);

  /// Values per pooled vector (after any dense projections).
  [[nodiscard]] int32_t n_embd() const { return n_out_; }
  [[nodiscard]] Pooling declared_pooling() const { return declared_; }
  /// Longest input: the position table (bert) or 0 (no limit of the model's own).
  [[nodiscard]] int32_t max_positions() const { return max_positions_; }
  /// The encoder's config and weights (bert), else nullptr / empty.
  [[nodiscard]] const models::BertConfig* bert_config() const {
    return bert_config_ ? &*bert_config_ : nullptr;
  }
  [[nodiscard]] const models::BertWeights& bert_weights() const { return bert_weights_; }

 private:
  struct Shape;
  Result<Shape*> shape_for(int32_t n_tokens);
  /// One forward pass over `batch` (indices into inputs); pooled vectors go to out.
  Status run_batch(std::span<const std::vector<int32_t>> inputs, std::span<const size_t> batch,
                   Pooling pooling, runtime::Scheduler& scheduler, Embeddings& out);

  const models::ModelConfig* config_ = nullptr;
  const models::ModelWeights* weights_ = nullptr;
  std::optional<models::BertConfig> bert_config_;
  models::BertWeights bert_weights_;
  Pooling declared_ = Pooling::kMean;
  int32_t n_embd_ = 0;
  int32_t max_positions_ = 0;
  bool one_per_pass_ = false;
  bool bidirectional_ = false;
  /// Dense projections after pooling: row-major [out][in] F32, applied in order.
  struct Dense {
    std::vector<float> w;
    size_t in = 0, out = 0;
  };
  std::vector<Dense> dense_;
  /// The vector's width after the projections.
  int32_t n_out_ = 0;
  std::vector<std::unique_ptr<Shape>> shapes_;  ///< most recently used last
};

/// Scales `v` to unit L2 length (a zero vector stays zero).
void l2_normalize(std::span<float> v);

}  // namespace geniex::engine
