// Internals of KvManager shared by its implementation files (kv_manager.cpp, kv_manager_io.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/kv_manager.h"

namespace geniex::runtime {

// Chain hash of a block: everything before it (prev) and its tokens.
inline uint64_t chain_hash(uint64_t prev, std::span<const int32_t> tokens) {
  uint64_t h = prev ^ 0x9e3779b97f4a7c15ULL;
  for (int32_t t : tokens) {
    h ^= static_cast<uint32_t>(t);
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
  }
  return h;
}

struct KvManager::Block {
  std::vector<int32_t> handle;  ///< per layer: KvStore handle, -1 = none (trimmed / no KV)
  std::vector<int32_t> tokens;  ///< tokens of a hashed (full) block, to verify lookups
  /// Models with recurrent state: every state layer's state (layer order, KvManager::
  /// snapshot_bytes()) after the block's last token, taken when a step wrote that token at its
  /// own position; empty: none (a state model then never resumes at this block's end).
  std::vector<uint8_t> snap;
  int32_t refs = 0;  ///< sequences holding it
  bool live = false;
  bool hashed = false;
  uint64_t hash = 0;
  uint64_t last_use = 0;
};

struct KvManager::Sequence {
  bool open = false;
  std::vector<int32_t> table;     ///< block ids (-1: a block whose cells were all dropped)
  std::vector<int32_t> tokens;    ///< live tokens in order
  std::vector<int32_t> cell_pos;  ///< per cell: position, -1 = dead
  std::vector<std::vector<uint8_t>> state;  ///< per layer recurrent state
  // The pending step.
  bool in_step = false;
  int32_t step_first_cell = 0;
  size_t step_table_size = 0, step_tokens = 0;
  std::vector<int32_t> step_pos;
  std::vector<std::pair<int, int32_t>> pins;  ///< (layer, handle)

  [[nodiscard]] int32_t n_cells() const { return static_cast<int32_t>(cell_pos.size()); }
};

struct KvManager::Impl {
  std::vector<Block> blocks;
  std::vector<int32_t> free_blocks;
  std::vector<Sequence> seqs;
  std::unordered_map<uint64_t, int32_t> prefix;  ///< chain hash -> block
  uint64_t clock = 0;
  int64_t prefix_hits = 0;
  int64_t live_blocks = 0;
};

}  // namespace geniex::runtime
