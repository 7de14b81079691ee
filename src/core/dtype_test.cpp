#include "core/dtype.h"

#include <gtest/gtest.h>

namespace geniex {
namespace {

TEST(Dtype, KnownSizes) {
  EXPECT_EQ(traits(GgmlType::kQ4_K).type_size, 144u);
  EXPECT_EQ(traits(GgmlType::kQ4_K).block_size, 256u);
  EXPECT_EQ(traits(GgmlType::kQ8_0).type_size, 34u);
  EXPECT_EQ(traits(GgmlType::kIQ4_XS).type_size, 136u);
  EXPECT_EQ(ggml_type_name(GgmlType::kBF16), "BF16");
  EXPECT_EQ(ggml_row_bytes(GgmlType::kQ4_K, 4096), 2304u);
  EXPECT_FALSE(ggml_row_bytes(GgmlType::kQ4_0, 33).has_value());
}

TEST(Dtype, RemovedIdsAreUnknown) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) {
    EXPECT_FALSE(ggml_type_traits(id).has_value()) << id;
  }
  for (uint32_t id : {0u, 1u, 2u, 12u, 14u, 30u, 39u}) {
    ASSERT_TRUE(ggml_type_traits(id).has_value()) << id;
    EXPECT_EQ(static_cast<uint32_t>(ggml_type_traits(id)->type), id);
  }
}

TEST(Dtype, NamesRoundTrip) {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto t = ggml_type_traits(id);
    if (!t) continue;
    EXPECT_EQ(ggml_type_from_name(t->name), t->type);
  }
}

}  // namespace
}  // namespace geniex
