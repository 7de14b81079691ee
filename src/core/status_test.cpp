#include "core/status.h"

#include <gtest/gtest.h>

namespace geniex {
namespace {

Result<int> half_of(int x) {
  if (x % 2 != 0) return invalid_argument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> quarter_of(int x) {
  GENIEX_ASSIGN_OR_RETURN(int h, half_of(x));
  GENIEX_ASSIGN_OR_RETURN(int q, half_of(h));
  return q;
}

Status check_even(int x) {
  GENIEX_TRY(half_of(x).status());
  return {};
}

TEST(Status, OkAndError) {
  EXPECT_TRUE(Status().ok());
  Status s = data_loss("bad file");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.to_string(), "DATA_LOSS: bad file");
}

TEST(Result, PropagatesThroughMacros) {
  auto r = quarter_of(12);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3);
  auto e = quarter_of(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "odd: 3");
  EXPECT_TRUE(check_even(4).ok());
  EXPECT_EQ(check_even(5).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geniex
