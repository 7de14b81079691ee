// Model::Impl: everything a loaded model owns — the mapped file, config, weights, tokenizer,
// chat template, scheduler over the backends, the KV cache of its one sequence — and the
// evaluation step that turns token ids into logits through the forward graph.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "geniex/geniex.hpp"
#include "gguf/gguf_reader.h"
#include "graph/run_reference.h"
#include "models/forward_graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"
#include "runtime/kv_cache.h"
#include "runtime/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace geniex {

struct Model::Impl {
  std::unique_ptr<gguf::GgufFile> file;
  models::ModelConfig config;
  models::ModelWeights weights;
  std::shared_ptr<const tokenizer::Tokenizer> tok;
  std::optional<std::string> chat_template;  ///< Jinja text; nullopt when none is known
  std::optional<runtime::Scheduler> scheduler;
  std::optional<runtime::KvCache> cache;
  std::vector<int32_t> cached;  ///< the tokens whose K/V are in `cache`, in order
  int32_t n_batch = 512;
  ModelInfo info;

  /// The cached single-token step (see decode_one).
  struct DecodeStep {
    int32_t bucket = 0;  ///< KV slots the graph attends over
    models::ForwardGraph fg;
    graph::Bindings bindings;
    std::vector<int32_t> token = {0}, pos = {0}, rows = {0}, kv_pos;
    std::vector<float> logits;
  };
  std::unique_ptr<DecodeStep> decode_step;

  /// Appends `tokens` to the context (in steps of at most n_batch) and returns the logits of
  /// the last token, or of every token when `all_logits` (rows of n_vocab). On error the
  /// context is rolled back to what it was.
  Result<std::vector<float>> eval(std::span<const int32_t> tokens, bool all_logits);

  /// One generated token through a cached decode graph (rebuilt only when the context crosses a
  /// 256-slot bucket), without allocating: returns the logits, valid until the next call.
  Result<std::span<const float>> decode_one(int32_t token);

  /// Drops cached tokens after the longest common prefix with `prompt`, keeping at least one
  /// prompt token to evaluate. Returns how many prompt tokens are reused.
  int32_t reuse_prefix(std::span<const int32_t> prompt);

  /// Checks ids are inside the vocabulary.
  Status check_tokens(std::span<const int32_t> tokens) const;
};

}  // namespace geniex
