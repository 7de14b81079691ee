// KvManager: the paged KV cache of a model — a pool of fixed-size blocks shared by all
// sequences, with per-sequence block tables, a prefix cache (full blocks are found again by the
// hash of all tokens up to them, so a new request or chat turn that starts with cached tokens
// reuses them), copy-on-write where sequences diverge inside a shared block, sliding-window
// layers that keep only their window, a memory budget with spill to disk (KvStore), context
// shift, and per-layer recurrent state beside KV (hybrid models such as LFM2). A state model's
// full blocks carry a snapshot of the states after their last token, so its sequences can be
// cut back to a block boundary and new sequences can attach cached blocks (the states restored).
//
// Vocabulary: a sequence's tokens occupy cells 0, 1, 2, ... ; cell c lives in block c / B of its
// block table, row c % B. A cell's position is normally c; after a context shift dropped cells
// they are dead (position -1) and later cells move down. A block has one frame (KvStore handle)
// per layer; sliding-window layers release the frames of blocks that left their window.
//
// A step: begin_step(seq, new tokens) reserves cells (allocating or copying blocks), then for
// each layer layer_view() lists the rows to write and the rows/positions to attend over (paging
// spilled frames in and pinning them), then end_step() commits or rolls back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "runtime/kv_store.h"

namespace geniex::runtime {

struct KvLayerSpec {
  int64_t k_row_elems = 0;     ///< head_dim_k * n_kv_head
  int64_t v_row_elems = 0;     ///< head_dim_v * n_kv_head
  int32_t sliding_window = 0;  ///< 0: full attention; else the window including the query
  int64_t state_bytes = 0;     ///< > 0: a recurrent state per sequence instead of / beside KV
};

struct KvManagerSpec {
  GgmlType type = GgmlType::kF16;  ///< F32, F16, Q8_0, Q4_0
  int32_t block_size = 32;         ///< cells per block
  int32_t n_ctx = 4096;            ///< cells per sequence
  int32_t n_seq_max = 1;           ///< sequences that can be open at once
  int32_t n_batch = 512;           ///< most new tokens of one step (sizes sliding-layer needs)
  std::vector<KvLayerSpec> layers;
  /// 0: no budget. Else the most bytes of KV frames resident in memory; frames beyond spill
  /// to a file in spill_dir.
  size_t budget_bytes = 0;
  std::string spill_dir = "/tmp";
  bool prefix_cache = true;  ///< keep full blocks of finished sequences for reuse
  /// Sliding-window layers keep this many tokens beyond their window, so a sequence can be cut
  /// back (a regenerated reply, a repeated benchmark step) that far and still be reused.
  int32_t rewind_margin = 256;
};

/// Rotates the K rows of one layer by a position delta (context shift): `rows` points at
/// `n_rows` rows of the cache type; `pos` are the rows' new positions.
using KvRotateFn = std::function<Status(int layer, uint8_t* rows, int64_t n_rows, int32_t delta)>;

struct KvManagerStats {
  int64_t blocks_in_use = 0;    ///< blocks held by open sequences
  int64_t blocks_cached = 0;    ///< blocks kept only by the prefix cache
  int64_t frames = 0;           ///< live frames (handles) over all layers
  int64_t frames_resident = 0;  ///< of which in memory
  int64_t frames_spilled = 0;   ///< of which only on disk
  int64_t bytes_resident = 0;   ///< frames_resident * frame bytes (memory the KV pages use)
  int64_t bytes_touched = 0;    ///< memory of every frame ever used (resident-set bound)
  int64_t spill_writes = 0, spill_reads = 0;
  int64_t prefix_hits = 0;     ///< tokens served from the prefix cache (lifetime)
  int64_t snapshots = 0;       ///< live blocks holding a recurrent-state snapshot
  int64_t snapshot_bytes = 0;  ///< their memory (snapshots * KvManager::snapshot_bytes())
  int32_t sequences = 0;
};

/// One layer's view of a step, filled by layer_view().
struct KvLayerView {
  std::vector<int32_t> slots;  ///< per new token: the state row to write
  std::vector<int32_t> rows;   ///< attended list: state rows
  std::vector<int32_t> pos;    ///< attended list: positions (-1 = skip)
};

class KvManager {
 public:
  using SeqId = int32_t;

  static Result<std::unique_ptr<KvManager>> create(const KvManagerSpec& spec);
  ~KvManager();

  [[nodiscard]] const KvManagerSpec& spec() const { return spec_; }
  /// The store holding layer il's frames (bind its buffers as the layer's K/V state).
  [[nodiscard]] KvStore& store(int il) const;
  /// First of block_size rows of layer `il`'s state that no sequence ever uses: where padding
  /// tokens of a static-shape step write their K/V (never read; shared by the layers of a
  /// store). The frame is taken and pinned at the first call.
  Result<int64_t> scratch_row(int il);
  /// Bytes of K+V per cached token over all layers (what a full-attention token costs).
  [[nodiscard]] size_t bytes_per_token() const;

  /// A new, empty sequence; kResourceExhausted when n_seq_max are open.
  Result<SeqId> open_sequence();
  /// Releases the sequence; its full blocks stay in the prefix cache (if enabled).
  void close_sequence(SeqId seq);

  /// Frees every block only the prefix cache holds.
  void clear_prefix_cache();

  [[nodiscard]] int32_t n_tokens(SeqId seq) const;
  [[nodiscard]] std::span<const int32_t> tokens(SeqId seq) const;
  /// Position the next token of the sequence gets.
  [[nodiscard]] int32_t next_pos(SeqId seq) const;

  /// Keeps the longest prefix of `prompt` the sequence already holds, or else attaches the
  /// longest run of blocks of the prefix cache that starts `prompt`; always leaves at least two
  /// prompt tokens to evaluate (a multi-row step: the same bits as a full prefill). Returns how
  /// many prompt tokens are reused. With recurrent state (see truncate) a kept or attached
  /// prefix ends at a block boundary whose block has a snapshot, and the states are restored
  /// from it; a whole cached sequence that starts `prompt` is kept with its current states.
  int32_t reuse_prefix(SeqId seq, std::span<const int32_t> prompt);
  /// Drops the tokens from index n on (n <= n_tokens); returns the new length. Sliding layers
  /// that no longer hold the window before the cut start over (0). With recurrent state a
  /// state cannot roll back: n other than the full length becomes the largest block boundary
  /// <= n whose block has a snapshot (with every token before it at its own position), the
  /// states restored from that snapshot, else 0 with zero states.
  int32_t truncate(SeqId seq, int32_t n);

  /// Reserves cells for `tokens` after the sequence's last cell; kOutOfRange past n_ctx (nothing
  /// changes), kResourceExhausted when no block can be had.
  Status begin_step(SeqId seq, std::span<const int32_t> tokens);
  /// Fills `view` for layer il of the pending step (pages frames in and pins them).
  Status layer_view(SeqId seq, int il, KvLayerView& view);
  /// How many entries layer_view(seq, il) lists (without paging anything in).
  [[nodiscard]] int32_t layer_view_size(SeqId seq, int il) const;
  /// Whether frames may be spilled (then views must be taken right before each layer runs).
  [[nodiscard]] bool spills() const;
  /// Positions of the pending step's new tokens.
  [[nodiscard]] std::span<const int32_t> step_positions(SeqId seq) const;
  /// Commits (ok) or rolls back the pending step; unpins; trims sliding layers; registers full
  /// blocks in the prefix cache.
  void end_step(SeqId seq, bool ok);

  /// Context shift: keeps the first n_keep tokens, drops the next n_discard, moves the rest
  /// down by n_discard positions (rotating their K rows with `rotate`).
  Status shift(SeqId seq, int32_t n_keep, int32_t n_discard, const KvRotateFn& rotate);

  /// Per-sequence recurrent state of layer il (layers with state_bytes > 0).
  std::span<uint8_t> layer_state(SeqId seq, int il);
  /// Bytes of one block snapshot: the states of every layer with state_bytes > 0, in layer
  /// order, each layer_state()'s bytes (0: the model has no recurrent state).
  [[nodiscard]] int64_t snapshot_bytes() const { return snapshot_bytes_; }
  /// During a pending step: the indices into the step's tokens after which a block ends whose
  /// snapshot is wanted (a model with recurrent state; the block's cells at their own
  /// positions). Empty for most decode steps.
  void snapshot_points(SeqId seq, std::vector<int32_t>& out) const;
  /// Keeps `states` (snapshot_bytes(): the states after step token k, one of snapshot_points)
  /// with the block that token ends. Call after the step ran, before end_step(seq, true).
  /// kInvalidArgument for another k or size.
  Status set_snapshot(SeqId seq, int32_t k, std::span<const uint8_t> states);

  /// Writes the sequence (tokens, positions, every layer's rows, states) to `path`; a versioned
  /// file with a checksum. `fingerprint` identifies the model (checked on load).
  Status save(SeqId seq, const std::string& path, const std::string& fingerprint);
  /// Replaces the sequence's contents with the file's; kDataLoss for a corrupt/truncated file,
  /// kInvalidArgument for another model / KV layout / version or a path that is not a regular
  /// file, kResourceExhausted for a file larger than max_file_bytes (checked before reading).
  Status load(SeqId seq, const std::string& path, const std::string& fingerprint);
  /// The largest file save() can write for this spec: a full context in every layer.
  [[nodiscard]] uint64_t max_file_bytes(const std::string& fingerprint) const;

  [[nodiscard]] KvManagerStats stats() const;

 private:
  struct Block;
  struct Sequence;
  explicit KvManager(KvManagerSpec spec);
  Result<int32_t> new_block();
  void drop_block_ref(int32_t b);
  void free_block(int32_t b);
  Status make_exclusive(Sequence& s, size_t table_index);
  bool evict_cached_block();
  void trim_sliding(Sequence& s);
  void register_full_blocks(Sequence& s);
  /// The states of `s` from block b's snapshot.
  void restore_snapshot(Sequence& s, int32_t b);
  [[nodiscard]] bool frames_needed_present(const Sequence& s, int32_t n_cells) const;
  Sequence& seq_ref(SeqId seq);
  [[nodiscard]] const Sequence& seq_ref(SeqId seq) const;

  KvManagerSpec spec_;
  std::vector<std::unique_ptr<KvStore>> stores_;
  std::vector<int> layer_store_;  ///< per layer: index into stores_
  std::vector<int32_t> scratch_;  ///< per store: the scratch handle (-1: not taken yet)
  int64_t max_blocks_ = 0;
  int64_t snapshot_bytes_ = 0;  ///< sum of the layers' state_bytes
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace geniex::runtime
