// StepRunner: one forward pass over the paged KV cache for one or more sequences.
//
// Each item appends its tokens to its sequence (KvManager::begin_step), every layer writes the
// new K/V into the sequence's blocks and attends over the sequence's cells (several sequences in
// one batch attend only over their own segment of the list). Graphs are cached by shape: KV
// lists are padded to buckets of 256 entries (padding has position -1 and is never read), so one
// graph, its placement and its memory plan serve many consecutive decode steps.
// With a KV budget that spills, each layer's view is taken by a hook right before the layer's
// first CacheWrite, so only that layer's frames must be resident while it runs.
// Short-conv layers (lfm2) carry no KV: each sequence's conv state (KvManager::layer_state) is
// copied into the step's graph input and the advanced state copied back once the step succeeded.
// A step in which a sequence fills a block (KvManager::snapshot_points) also binds each conv
// layer's input u as an output and hands the KvManager the states after that block's last token
// (the last conv_taps - 1 columns of the old state ++ u), so a later prompt can resume there;
// steps that fill no block (most decode steps) run the graph without those outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/forward_graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"
#include "runtime/kv_manager.h"
#include "runtime/scheduler.h"

namespace geniex::engine {

struct StepItem {
  runtime::KvManager::SeqId seq = 0;
  std::span<const int32_t> tokens;
  /// Logits wanted for the last n_outputs tokens (1: the last token's, for sampling;
  /// tokens.size(): every token's). At least 1.
  int32_t n_outputs = 1;
  /// Empty, or one entry per token: -1 for the token's own embedding, else the row of
  /// `embd_table` (n_embd floats each) that replaces it (an image feature). Tokens with a row
  /// may carry ids outside the vocabulary (the cache's image keys): the graph never reads them.
  std::span<const int32_t> embd_rows = {};
  std::span<const float> embd_table = {};
};

class StepRunner {
 public:
  StepRunner(const models::ModelConfig& config, const models::ModelWeights& weights,
             runtime::Scheduler& scheduler, runtime::KvManager& kv);
  ~StepRunner();

  /// Runs the items as one batch. Returns the logits, n_vocab floats per output row: per item
  /// in order, the rows of its last n_outputs tokens. Valid until the next
  /// run. On error every sequence is rolled back to where it was.
  Result<std::span<const float>> run(std::span<const StepItem> items);

  /// Token counts a static-shape unit accepts (ascending, e.g. {1, 128}): a step of n tokens
  /// is padded to the smallest count >= n (steps larger than all counts run unpadded). Empty:
  /// no padding.
  void set_static_batches(std::vector<int32_t> counts) { static_batches_ = std::move(counts); }
  [[nodiscard]] int32_t padded_tokens(int32_t n) const;

  /// Graphs built so far (for tests: reuse across decode steps).
  [[nodiscard]] int64_t graphs_built() const { return graphs_built_; }

 private:
  struct Step;
  Result<Step*> step_for(std::span<const StepItem> items, int32_t n_tokens, int32_t n_out,
                         bool snapshots);
  Status fill_layer(Step& st, std::span<const StepItem> items, int il);
  /// Short-conv layers: copies each item's state into the step's input (item i = slot i) and
  /// sets each token's slot; scatter writes the advanced states back to the sequences.
  void gather_conv_states(Step& st, std::span<const StepItem> items);
  void scatter_conv_states(Step& st, std::span<const StepItem> items);
  /// The states after each item's snapshot points (snap_points_) from the step's u outputs,
  /// handed to the KvManager.
  Status take_snapshots(Step& st, std::span<const StepItem> items);

  const models::ModelConfig& config_;
  const models::ModelWeights& weights_;
  runtime::Scheduler& scheduler_;
  runtime::KvManager& kv_;
  std::vector<std::unique_ptr<Step>> steps_;  ///< most recently used first
  int64_t graphs_built_ = 0;
  std::vector<int32_t> static_batches_;
  uint64_t clock_ = 0;
  std::vector<std::vector<int32_t>> snap_points_;  ///< per item of the run in progress
  std::vector<uint8_t> snap_buf_;
};

}  // namespace geniex::engine
