// Many arrays side by side on transparent huge pages: a bump allocator over HugeBuffer chunks,
// for weight copies that live as long as the model. A HugeBuffer of its own gets huge pages only
// from 2 MiB up, so most matrices of a small model (a 1024 x 1024 Q4_K projection is 0.6 MB)
// stayed on 4 KiB pages; side by side in one arena every one of them is on 2 MiB pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/huge_buffer.h"
#include "core/status.h"

namespace geniex {

class HugeArena {
 public:
  /// Bytes of a chunk (a larger request gets a chunk of its own size, in whole huge pages).
  static constexpr size_t kChunkBytes = size_t{64} << 20;
  /// Every block starts at a multiple of this (a cache line).
  static constexpr size_t kAlign = 64;

  /// `huge_pages` false: chunks on plain pages, never advised (HugeBuffer::allocate).
  explicit HugeArena(bool huge_pages = true, size_t chunk_bytes = kChunkBytes)
      : huge_pages_(huge_pages), chunk_bytes_(chunk_bytes) {}

  struct Block {
    uint8_t* data = nullptr;  ///< `bytes` zero-filled bytes, kAlign-aligned, until ~HugeArena
    bool advised = false;     ///< its chunk took the MADV_HUGEPAGE advice (HugeBuffer::advised)
  };

  /// `bytes` > 0 from the current chunk, or from a new one when they do not fit (the rest of the
  /// old chunk stays unused and, never touched, takes no memory). resource_exhausted when the
  /// address space cannot hold a new chunk; the arena is unchanged then.
  Result<Block> allocate(size_t bytes);

  /// Chunks mapped so far.
  [[nodiscard]] size_t chunks() const { return chunks_.size(); }

 private:
  bool huge_pages_;
  size_t chunk_bytes_;
  std::vector<HugeBuffer> chunks_;
  size_t used_ = 0;  ///< bytes taken from the last chunk
};

}  // namespace geniex
