#include "core/huge_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace geniex {
namespace {

uintptr_t addr(const uint8_t* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(HugeArena, BlocksAreAlignedZeroedDisjointAndShareAChunk) {
  HugeArena arena;
  std::vector<HugeArena::Block> blocks;
  const std::vector<size_t> sizes = {1, 100, 4096, 65, 300000, 7};
  for (size_t n : sizes) {
    auto b = arena.allocate(n);
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_NE(b->data, nullptr);
    EXPECT_EQ(addr(b->data) % HugeArena::kAlign, 0u) << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(b->data[i], 0) << n << " byte " << i;
    blocks.push_back(*b);
  }
  EXPECT_EQ(arena.chunks(), 1u) << "small blocks fill one chunk";
  // Fill each block with its own byte, then check none was overwritten by a later one.
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::memset(blocks[i].data, static_cast<int>(i + 1), sizes[i]);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (size_t j = 0; j < sizes[i]; ++j) {
      ASSERT_EQ(blocks[i].data[j], static_cast<uint8_t>(i + 1)) << "block " << i << " byte " << j;
    }
  }
  // In order, side by side: each block starts after the previous one ends.
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_GE(addr(blocks[i].data), addr(blocks[i - 1].data) + sizes[i - 1]);
  }
}

TEST(HugeArena, OpensANewChunkWhenABlockDoesNotFit) {
  constexpr size_t kChunk = size_t{4} << 20;
  HugeArena arena(/*huge_pages=*/true, kChunk);
  auto a = arena.allocate(3 << 20);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(arena.chunks(), 1u);
  auto b = arena.allocate(2 << 20);  // 1 MiB left: a new chunk
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(arena.chunks(), 2u);
  auto c = arena.allocate(1 << 20);  // fits after b in the new chunk
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(arena.chunks(), 2u);
  EXPECT_EQ(addr(c->data), addr(b->data) + (2 << 20));
  // Larger than a chunk: a chunk of its own, in whole huge pages, every byte usable.
  const size_t big = kChunk + 12345;
  auto d = arena.allocate(big);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(arena.chunks(), 3u);
  EXPECT_EQ(addr(d->data) % HugeBuffer::kHugePage, 0u);
  d->data[0] = 1;
  d->data[big - 1] = 2;
  EXPECT_EQ(a->data[0], 0);
  EXPECT_EQ(b->data[0], 0);
  EXPECT_EQ(c->data[0], 0);
}

TEST(HugeArena, ChunksAreAdvisedAsAskedWhereTheKernelHasHugePages) {
  HugeArena plain(/*huge_pages=*/false);
  auto p = plain.allocate(1000);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->advised);
  HugeArena huge;
  auto h = huge.allocate(1000);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->advised, huge_pages_available());
}

TEST(HugeArena, RefusesZeroBytesAndWhatTheAddressSpaceCannotHold) {
  HugeArena arena;
  auto z = arena.allocate(0);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.status().code(), StatusCode::kInvalidArgument);
  auto huge = arena.allocate(SIZE_MAX / 2);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  auto over = arena.allocate(SIZE_MAX);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(arena.chunks(), 0u) << "a refused chunk is not kept";
  auto ok = arena.allocate(10);  // still usable
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(arena.chunks(), 1u);
}

}  // namespace
}  // namespace geniex
