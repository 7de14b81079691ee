// KvCache: spec validation, slot accounting (append / truncate / overflow) and size arithmetic.
#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace geniex::runtime {
namespace {

KvCacheSpec spec(int32_t n_ctx, GgmlType type = GgmlType::kF16) {
  KvCacheSpec s;
  s.n_ctx = n_ctx;
  s.type = type;
  s.k_row_elems = {64 * 2, 64 * 2, 128 * 1};  // per layer: head_dim * n_kv_head
  s.v_row_elems = {64 * 2, 64 * 2, 96 * 1};
  return s;
}

TEST(KvCache, CreateReportsShape) {
  auto c = KvCache::create(spec(16));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_used(), 0);
  EXPECT_EQ(c->capacity(), 16);
  EXPECT_EQ(c->type(), GgmlType::kF16);
  EXPECT_EQ(c->n_layers(), 3u);
}

TEST(KvCache, BytesPerTokenAndReservedF16) {
  auto c = KvCache::create(spec(16, GgmlType::kF16));
  ASSERT_TRUE(c.ok());
  const size_t per_token = (128 + 128) * 2 + (128 + 128) * 2 + (128 + 96) * 2;
  EXPECT_EQ(c->bytes_per_token(), per_token);
  EXPECT_EQ(c->reserved_bytes(), per_token * 16);
  EXPECT_EQ(c->k(0).size(), size_t{128} * 2 * 16);
  EXPECT_EQ(c->v(2).size(), size_t{96} * 2 * 16);
  EXPECT_EQ(c->k(2).size(), size_t{128} * 2 * 16);
  size_t sum = 0;
  for (size_t il = 0; il < c->n_layers(); ++il) sum += c->k(il).size() + c->v(il).size();
  EXPECT_EQ(sum, c->reserved_bytes());
}

TEST(KvCache, BytesPerTokenAndReservedF32) {
  auto c = KvCache::create(spec(5, GgmlType::kF32));
  ASSERT_TRUE(c.ok());
  const size_t per_token = (128 + 128) * 4 + (128 + 128) * 4 + (128 + 96) * 4;
  EXPECT_EQ(c->bytes_per_token(), per_token);
  EXPECT_EQ(c->reserved_bytes(), per_token * 5);
  EXPECT_EQ(c->v(1).size(), size_t{128} * 4 * 5);
}

TEST(KvCache, BuffersAreWritableAndDistinct) {
  auto c = KvCache::create(spec(4));
  ASSERT_TRUE(c.ok());
  // Every byte of every layer can be written (ASan checks the bounds) and layers do not alias.
  for (size_t il = 0; il < c->n_layers(); ++il) {
    std::memset(c->k(il).data(), static_cast<int>(2 * il), c->k(il).size());
    std::memset(c->v(il).data(), static_cast<int>(2 * il + 1), c->v(il).size());
  }
  for (size_t il = 0; il < c->n_layers(); ++il) {
    EXPECT_EQ(c->k(il).front(), 2 * il);
    EXPECT_EQ(c->k(il).back(), 2 * il);
    EXPECT_EQ(c->v(il).front(), 2 * il + 1);
    EXPECT_EQ(c->v(il).back(), 2 * il + 1);
  }
  // Moving the cache keeps the storage.
  uint8_t* k0 = c->k(0).data();
  KvCache moved = std::move(*c);
  EXPECT_EQ(moved.k(0).data(), k0);
}

TEST(KvCache, AppendTruncateAndOverflow) {
  auto c = KvCache::create(spec(8));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->append(5).ok());
  EXPECT_EQ(c->n_used(), 5);
  ASSERT_TRUE(c->append(0).ok());
  EXPECT_EQ(c->n_used(), 5);
  ASSERT_TRUE(c->append(1).ok());
  EXPECT_EQ(c->n_used(), 6);

  // Overflow: kOutOfRange and nothing changes.
  const Status over = c->append(3);
  EXPECT_EQ(over.code(), StatusCode::kOutOfRange);
  EXPECT_NE(over.message().find("8"), std::string::npos) << over.to_string();
  EXPECT_EQ(c->n_used(), 6);
  EXPECT_EQ(c->append(-1).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c->n_used(), 6);
  EXPECT_EQ(c->append(INT32_MAX).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c->n_used(), 6);

  // Exactly full is fine; one more is not.
  ASSERT_TRUE(c->append(2).ok());
  EXPECT_EQ(c->n_used(), 8);
  EXPECT_EQ(c->append(1).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c->n_used(), 8);

  // Truncate keeps a prefix; growing by truncate or negative values is ignored.
  c->truncate(3);
  EXPECT_EQ(c->n_used(), 3);
  c->truncate(7);
  EXPECT_EQ(c->n_used(), 3);
  c->truncate(-2);
  EXPECT_EQ(c->n_used(), 3);
  c->truncate(3);
  EXPECT_EQ(c->n_used(), 3);
  ASSERT_TRUE(c->append(5).ok());
  EXPECT_EQ(c->n_used(), 8);
  c->truncate(0);
  EXPECT_EQ(c->n_used(), 0);
  ASSERT_TRUE(c->append(8).ok());
}

TEST(KvCache, BadSpecs) {
  for (int32_t n_ctx : {0, -1}) {
    auto c = KvCache::create(spec(n_ctx));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << n_ctx;
  }
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kBF16}) {
    auto c = KvCache::create(spec(8, t));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(c.status().message().find(std::string(ggml_type_name(t))), std::string::npos)
        << c.status().to_string();
  }
  {
    KvCacheSpec s = spec(8);
    s.v_row_elems.pop_back();
    auto c = KvCache::create(s);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  }
  {
    KvCacheSpec s = spec(8);
    s.k_row_elems.clear();
    s.v_row_elems.clear();
    auto c = KvCache::create(s);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(KvCache, SingleSlotCache) {
  KvCacheSpec s;
  s.n_ctx = 1;
  s.type = GgmlType::kF32;
  s.k_row_elems = {8};
  s.v_row_elems = {4};
  auto c = KvCache::create(s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bytes_per_token(), size_t{(8 + 4) * 4});
  EXPECT_EQ(c->reserved_bytes(), size_t{(8 + 4) * 4});
  ASSERT_TRUE(c->append(1).ok());
  EXPECT_EQ(c->append(1).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c->n_used(), 1);
}

}  // namespace
}  // namespace geniex::runtime
