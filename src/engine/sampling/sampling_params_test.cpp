// SamplingParams::validate: every field's bounds, with the field named in the message.
#include "engine/sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace geniex::sampling {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

void expect_invalid(const SamplingParams& p, const std::string& field) {
  const Status s = p.validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << field;
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
}

TEST(SamplingParams, DefaultsAndBoundariesAreValid) {
  EXPECT_TRUE(SamplingParams{}.validate().ok());
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.penalty_last_n = -1;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.repetition_penalty = 1e-3f;
  EXPECT_TRUE(p.validate().ok());
  p.top_p = 1e-6f;
  p.min_p = 0.999f;
  p.top_k = 1 << 30;
  EXPECT_TRUE(p.validate().ok());
}

TEST(SamplingParams, Temperature) {
  for (const float t : {-0.1f, kNan, kInf, -kInf}) {
    SamplingParams p;
    p.temperature = t;
    expect_invalid(p, "temperature");
  }
}

TEST(SamplingParams, TopK) {
  SamplingParams p;
  p.top_k = -1;
  expect_invalid(p, "top_k");
}

TEST(SamplingParams, TopP) {
  for (const float v : {0.0f, -0.5f, 1.0001f, kNan, kInf}) {
    SamplingParams p;
    p.top_p = v;
    expect_invalid(p, "top_p");
  }
}

TEST(SamplingParams, MinP) {
  for (const float v : {1.0f, -0.01f, kNan, kInf}) {
    SamplingParams p;
    p.min_p = v;
    expect_invalid(p, "min_p");
  }
}

TEST(SamplingParams, Penalties) {
  for (const float v : {0.0f, -1.0f, kNan, kInf}) {
    SamplingParams p;
    p.repetition_penalty = v;
    expect_invalid(p, "repetition_penalty");
  }
  for (const float v : {kNan, kInf, -kInf}) {
    SamplingParams p;
    p.presence_penalty = v;
    expect_invalid(p, "presence_penalty");
    SamplingParams q;
    q.frequency_penalty = v;
    expect_invalid(q, "frequency_penalty");
  }
  SamplingParams p;
  p.penalty_last_n = -2;
  expect_invalid(p, "penalty_last_n");
}

TEST(SamplingParams, HasPenalties) {
  SamplingParams p;
  EXPECT_FALSE(p.has_penalties());
  p.presence_penalty = 0.5f;
  EXPECT_TRUE(p.has_penalties());
  p.penalty_last_n = 0;
  EXPECT_FALSE(p.has_penalties());
}

}  // namespace
}  // namespace geniex::sampling
