#include "core/huge_arena.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace geniex {

Result<HugeArena::Block> HugeArena::allocate(size_t bytes) {
  if (bytes == 0) return invalid_argument("HugeArena: zero bytes");
  if (bytes > SIZE_MAX - HugeBuffer::kHugePage) {
    return resource_exhausted("HugeArena: size overflows");
  }
  const size_t at = (used_ + kAlign - 1) / kAlign * kAlign;
  if (chunks_.empty() || at > chunks_.back().size() || chunks_.back().size() - at < bytes) {
    const size_t whole =
        (bytes + HugeBuffer::kHugePage - 1) / HugeBuffer::kHugePage * HugeBuffer::kHugePage;
    auto chunk = HugeBuffer::allocate(std::max(chunk_bytes_, whole), huge_pages_);
    if (!chunk.ok()) return chunk.status();
    chunks_.push_back(std::move(chunk).value());
    used_ = bytes;
    return Block{chunks_.back().data(), chunks_.back().advised()};
  }
  used_ = at + bytes;
  return Block{chunks_.back().data() + at, chunks_.back().advised()};
}

}  // namespace geniex
