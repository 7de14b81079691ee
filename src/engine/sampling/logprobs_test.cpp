// top_logprobs / logprob_of: log-softmax values, ordering, ties, errors.
#include "engine/sampling/logprobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "engine/sampling/rng.h"

namespace geniex::sampling {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

TEST(Logprobs, HandExample) {
  const std::vector<float> logits = {0.0f, static_cast<float>(std::log(2.0)), kNegInf,
                                     static_cast<float>(std::log(2.0))};
  // softmax: 1/5, 2/5, 0, 2/5
  auto top = top_logprobs(logits, 4);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->size(), 4u);
  EXPECT_EQ((*top)[0].id, 1);  // tie with 3: lower id first
  EXPECT_EQ((*top)[1].id, 3);
  EXPECT_EQ((*top)[2].id, 0);
  EXPECT_EQ((*top)[3].id, 2);
  EXPECT_NEAR((*top)[0].logprob, std::log(0.4), 1e-6);
  EXPECT_NEAR((*top)[1].logprob, std::log(0.4), 1e-6);
  EXPECT_NEAR((*top)[2].logprob, std::log(0.2), 1e-6);
  EXPECT_EQ((*top)[3].logprob, kNegInf);
  EXPECT_NEAR(*logprob_of(logits, 0), std::log(0.2), 1e-6);
  EXPECT_EQ(*logprob_of(logits, 2), kNegInf);
}

TEST(Logprobs, KIsClampedAndZeroGivesNothing) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  EXPECT_EQ(top_logprobs(logits, 0)->size(), 0u);
  auto all = top_logprobs(logits, 10);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, 2);
  EXPECT_EQ((*all)[2].id, 0);
  auto one = top_logprobs(logits, 1);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].id, 2);
}

TEST(Logprobs, MatchesFullSortAndSumsToOne) {
  Pcg32 rng(31);
  std::vector<float> logits(20000);
  for (float& x : logits) x = std::round(static_cast<float>(rng.next_unit_double() * 40.0)) / 2;
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  auto top = top_logprobs(logits, 20);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ((*top)[i].id, order[i]) << i;
    EXPECT_EQ((*top)[i].logprob, *logprob_of(logits, order[i]));
  }
  auto all = top_logprobs(logits, static_cast<int>(logits.size()));
  ASSERT_TRUE(all.ok());
  double total = 0.0;
  for (const TokenLogprob& t : *all) total += std::exp(static_cast<double>(t.logprob));
  EXPECT_NEAR(total, 1.0, 1e-4);
  EXPECT_EQ((*all)[0].logprob, (*top)[0].logprob);
}

TEST(Logprobs, Errors) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(top_logprobs(std::vector<float>{1.0f, nan}, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(top_logprobs(std::vector<float>{1.0f, -kNegInf}, 1).ok());
  EXPECT_FALSE(top_logprobs(std::vector<float>{kNegInf, kNegInf}, 1).ok());
  EXPECT_FALSE(top_logprobs(std::vector<float>{}, 1).ok());
  EXPECT_FALSE(top_logprobs(std::vector<float>{1.0f}, -1).ok());
  EXPECT_FALSE(logprob_of(std::vector<float>{1.0f, 2.0f}, 2).ok());
  EXPECT_FALSE(logprob_of(std::vector<float>{1.0f, 2.0f}, -1).ok());
  EXPECT_FALSE(logprob_of(std::vector<float>{nan, 2.0f}, 1).ok());
}

}  // namespace
}  // namespace geniex::sampling
