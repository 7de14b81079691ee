// Sampler: greedy, determinism, the distribution against softmax (chi-square), each
// truncation step and penalty on hand-computed examples, errors, and golden sequences that
// pin the exact draws across platforms.
#include "engine/sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "engine/sampling/portable_exp.h"
#include "engine/sampling/rng.h"

namespace geniex::sampling {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// Params with every truncation off: the draw is from softmax(logits / T).
SamplingParams plain(float temperature = 1.0f, uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

Sampler make(const SamplingParams& p, int32_t n_vocab) {
  auto s = Sampler::create(p, n_vocab);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

std::vector<float> logs_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (const double p : probs) out.push_back(p > 0 ? static_cast<float>(std::log(p)) : kNegInf);
  return out;
}

std::vector<int32_t> ids_of(std::span<const Candidate> c) {
  std::vector<int32_t> ids;
  for (const Candidate& x : c) ids.push_back(x.id);
  return ids;
}

/// Random logits for property checks (platform-independent generator).
std::vector<float> random_logits(Pcg32& rng, int32_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>((rng.next_unit_double() - 0.5) * scale);
  return v;
}

std::map<int32_t, float> logits_by_id(std::span<const Candidate> c) {
  std::map<int32_t, float> m;
  for (const Candidate& x : c) m[x.id] = x.logit;
  return m;
}

// ---------------------------------------------------------------------------------------------
// Greedy and determinism

TEST(Sampler, GreedyPicksArgmaxTiesToLowestId) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s = make(p, 6);
  const std::vector<float> a = {0.5f, 2.0f, -1.0f, 1.9f, 2.0f, kNegInf};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(*s.sample(a, {}), 1);
  const std::vector<float> b = {kNegInf, kNegInf, -3.0f, kNegInf, -3.0f, -4.0f};
  EXPECT_EQ(*s.sample(b, {}), 2);
  auto d = s.distribution(a, {});
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].id, 1);
  EXPECT_EQ((*d)[0].p, 1.0);
}

// Greedy without penalties reads the logits in place in one pass of 64-element chunks (an 8-lane
// max per chunk, the first chunk reaching the maximum kept, then the first index inside it): it
// must equal a sequential first-maximum scan for every vocabulary size (tails after whole lanes
// and whole chunks), wherever the maximum sits, with and without ties, and with -inf entries;
// and all -inf is an error, as through the penalized path.
TEST(Sampler, GreedyInPlaceEqualsSequentialScanForEverySizeAndPosition) {
  Pcg32 rng(5);
  SamplingParams p;
  p.temperature = 0.0f;
  for (int32_t n : {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 1003, 4099}) {
    Sampler s = make(p, n);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> logits = random_logits(rng, n, 4.0f);
      if (trial % 2 == 0) {
        for (float& x : logits) x = std::round(x);  // ties
      }
      if (trial % 5 == 0 && n > 1) logits[static_cast<size_t>(trial) % logits.size()] = kNegInf;
      if (trial % 7 == 0) logits.back() = 100.0f;                        // the maximum in the tail
      const auto best = std::max_element(logits.begin(), logits.end());  // first maximum
      ASSERT_EQ(*s.sample(logits, {}), static_cast<int32_t>(best - logits.begin()))
          << "n " << n << " trial " << trial;
    }
    // The maximum tied across chunks and the tail: the earliest copy wins, wherever it sits.
    for (const int32_t first : {n - 1, n / 2, 0}) {
      std::vector<float> logits = random_logits(rng, n, 4.0f);
      for (int32_t i = first; i < n; i += 37) logits[static_cast<size_t>(i)] = 50.0f;
      logits.back() = 50.0f;
      ASSERT_EQ(*s.sample(logits, {}), first) << "n " << n;
    }
    const std::vector<float> masked(static_cast<size_t>(n), kNegInf);
    const auto r = s.sample(masked, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    // A NaN or +inf anywhere (vector lanes or the tail) is an error naming that token.
    for (const int32_t at : {0, n / 2, n - 1}) {
      for (const float badv : {std::numeric_limits<float>::quiet_NaN(), -kNegInf}) {
        std::vector<float> logits = random_logits(rng, n, 4.0f);
        logits[static_cast<size_t>(at)] = badv;
        const auto e = s.sample(logits, {});
        ASSERT_FALSE(e.ok()) << "n " << n << " at " << at;
        EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(e.status().message().find("token " + std::to_string(at)), std::string::npos)
            << e.status().message();
      }
    }
    EXPECT_FALSE(s.sample(std::vector<float>(static_cast<size_t>(n) + 1, 0.0f), {}).ok());
  }
}

TEST(Sampler, TopKOneEqualsGreedy) {
  Pcg32 rng(77);
  SamplingParams p = plain(1.3f, 5);
  p.top_k = 1;
  Sampler s = make(p, 500);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits = random_logits(rng, 500, 8.0f);
    // Quantize so ties happen: the lowest id among the maxima must win.
    for (float& x : logits) x = std::round(x);
    const auto best = std::max_element(logits.begin(), logits.end());  // first maximum
    ASSERT_EQ(*s.sample(logits, {}), static_cast<int32_t>(best - logits.begin()));
  }
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferent) {
  Pcg32 rng(3);
  const std::vector<float> logits = random_logits(rng, 1000, 6.0f);
  SamplingParams p = plain(1.0f, 42);
  Sampler a = make(p, 1000);
  Sampler b = make(p, 1000);
  p.seed = 43;
  Sampler c = make(p, 1000);
  std::vector<int32_t> sa;
  std::vector<int32_t> sb;
  std::vector<int32_t> sc;
  for (int i = 0; i < 1000; ++i) {
    sa.push_back(*a.sample(logits, {}));
    sb.push_back(*b.sample(logits, {}));
    sc.push_back(*c.sample(logits, {}));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
  // reset() restarts the stream.
  a.reset(42);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(*a.sample(logits, {}), sa[static_cast<size_t>(i)]);
  c.reset(42);
  EXPECT_EQ(*c.sample(logits, {}), sa[0]);
  EXPECT_EQ(c.params().seed, 42u);
}

TEST(Sampler, ErrorsConsumeNoRandomness) {
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f};
  const std::vector<float> bad = {0.1f, std::numeric_limits<float>::quiet_NaN(), 0.3f, 0.4f};
  Sampler a = make(plain(1.0f, 9), 4);
  Sampler b = make(plain(1.0f, 9), 4);
  for (int i = 0; i < 50; ++i) {
    EXPECT_FALSE(b.sample(bad, {}).ok());
    ASSERT_EQ(*a.sample(logits, {}), *b.sample(logits, {}));
  }
}

// ---------------------------------------------------------------------------------------------
// The distribution

TEST(Sampler, EmpiricalDistributionMatchesSoftmax) {
  const std::vector<float> logits = {1.0f,  -0.5f, 2.0f,   0.0f,  0.25f, -1.5f, 1.5f,  0.75f,
                                     -2.0f, 0.5f,  -0.25f, 1.25f, -1.0f, 0.1f,  1.75f, -0.75f};
  const size_t n = logits.size();
  std::vector<double> probs(n);
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) z += std::exp(static_cast<double>(logits[i]));
  for (size_t i = 0; i < n; ++i) probs[i] = std::exp(static_cast<double>(logits[i])) / z;

  Sampler s = make(plain(1.0f, 2024), static_cast<int32_t>(n));
  // distribution() is exactly the softmax, in id order (nothing sorted it).
  auto d = s.distribution(logits, {});
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ((*d)[i].id, static_cast<int32_t>(i));
    EXPECT_NEAR((*d)[i].p, probs[i], 1e-12);
  }

  constexpr int kSamples = 200000;
  std::vector<int> counts(n, 0);
  for (int i = 0; i < kSamples; ++i) ++counts[static_cast<size_t>(*s.sample(logits, {}))];
  double chi2 = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double expected = kSamples * probs[i];
    ASSERT_GT(expected, 5.0);
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  // 15 degrees of freedom: P(chi2 > 44.6) ~= 1e-4.
  EXPECT_LT(chi2, 44.6) << "chi-square " << chi2;
  // And it is not suspiciously perfect (P(chi2 < 2.0) ~= 1e-5), which would mean no randomness.
  EXPECT_GT(chi2, 2.0);
}

TEST(Sampler, MaskedTokensAreNeverDrawn) {
  std::vector<float> logits(64, 0.0f);
  for (size_t i = 0; i < logits.size(); i += 2) logits[i] = kNegInf;
  Sampler s = make(plain(1.0f, 11), 64);
  for (int i = 0; i < 20000; ++i) ASSERT_EQ(*s.sample(logits, {}) % 2, 1);
}

TEST(Sampler, TemperatureScalesTheSoftmax) {
  const std::vector<float> logits = {0.0f, static_cast<float>(std::log(2.0))};
  const double r = std::exp(static_cast<double>(logits[1]));  // ~2, the float's exact ratio
  const struct {
    float t;
    double p1;
  } cases[] = {{1.0f, r / (1 + r)},
               {0.5f, r * r / (1 + r * r)},
               {2.0f, std::sqrt(r) / (1 + std::sqrt(r))},
               {0.01f, 1.0 / (1.0 + std::pow(r, -100.0))}};
  for (const auto& c : cases) {
    Sampler s = make(plain(c.t), 2);
    auto d = s.distribution(logits, {});
    ASSERT_TRUE(d.ok());
    ASSERT_EQ(d->size(), 2u);
    EXPECT_NEAR((*d)[1].p, c.p1, 1e-12) << c.t;
    EXPECT_NEAR((*d)[0].p + (*d)[1].p, 1.0, 1e-15);
  }
  // Empirically at T = 0.5: p1 = 4/5.
  Sampler s = make(plain(0.5f, 8), 2);
  int ones = 0;
  for (int i = 0; i < 100000; ++i) ones += *s.sample(logits, {});
  EXPECT_NEAR(ones / 100000.0, 0.8, 0.006);
}

// ---------------------------------------------------------------------------------------------
// Truncation

// Probabilities 0.5, 0.2, 0.15, 0.1, 0.05 placed at shuffled ids.
const std::vector<double> kProbs = {0.1, 0.5, 0.05, 0.2, 0.15};  // ids: 1, 3, 4, 0, 2 by rank

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  const std::vector<float> logits = logs_of(kProbs);
  const struct {
    float top_p;
    std::vector<int32_t> ids;
  } cases[] = {
      {0.4f, {1}},           // 0.5 >= 0.4
      {0.6f, {1, 3}},        // 0.5 < 0.6 <= 0.7
      {0.75f, {1, 3, 4}},    // 0.7 < 0.75 <= 0.85
      {0.9f, {1, 3, 4, 0}},  // 0.85 < 0.9 <= 0.95
      {0.99f, {1, 3, 4, 0, 2}},
      {1.0f, {0, 1, 2, 3, 4}},  // off: id order
  };
  for (const auto& c : cases) {
    SamplingParams p = plain();
    p.top_p = c.top_p;
    Sampler s = make(p, 5);
    auto d = s.distribution(logits, {});
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(ids_of(*d), c.ids) << c.top_p;
  }
  // Renormalized: top_p 0.75 keeps 0.5 : 0.2 : 0.15.
  SamplingParams p = plain();
  p.top_p = 0.75f;
  Sampler s = make(p, 5);
  auto d = s.distribution(logits, {});
  ASSERT_TRUE(d.ok());
  EXPECT_NEAR((*d)[0].p, 0.5 / 0.85, 1e-7);
  EXPECT_NEAR((*d)[1].p, 0.2 / 0.85, 1e-7);
  EXPECT_NEAR((*d)[2].p, 0.15 / 0.85, 1e-7);
}

TEST(Sampler, TopPWorksOnTheSoftmaxOfWhatTopKLeft) {
  const std::vector<float> logits = logs_of(kProbs);
  SamplingParams p = plain();
  p.top_p = 0.8f;
  // Without top-k: 0.5 + 0.2 = 0.7 < 0.8, so three tokens.
  EXPECT_EQ(ids_of(*make(p, 5).distribution(logits, {})), (std::vector<int32_t>{1, 3, 4}));
  // With top-k 3 the mass is renormalized over 0.85: 0.7 / 0.85 = 0.82 >= 0.8, so two.
  p.top_k = 3;
  EXPECT_EQ(ids_of(*make(p, 5).distribution(logits, {})), (std::vector<int32_t>{1, 3}));
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  const std::vector<float> logits = logs_of(kProbs);
  SamplingParams q = plain();
  q.top_k = 3;
  Sampler s = make(q, 5);
  auto e = s.distribution(logits, {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(ids_of(*e), (std::vector<int32_t>{1, 3, 4}));
  EXPECT_NEAR((*e)[2].p, 0.15 / 0.85, 1e-7);
  // Ties at the boundary go to the lower id.
  const std::vector<float> tied = {1.0f, 3.0f, 1.0f, 1.0f, 2.0f};
  EXPECT_EQ(ids_of(*s.distribution(tied, {})), (std::vector<int32_t>{1, 4, 0}));
  // top_k above the vocabulary keeps all.
  q.top_k = 100;
  Sampler big = make(q, 5);
  EXPECT_EQ(big.distribution(logits, {})->size(), 5u);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  const std::vector<float> logits = logs_of(kProbs);
  const struct {
    float min_p;
    std::vector<int32_t> ids;  // id order: nothing sorted them
  } cases[] = {
      {0.05f, {0, 1, 2, 3, 4}},  // threshold 0.025
      {0.25f, {1, 3, 4}},        // threshold 0.125: 0.1 and 0.05 go
      {0.35f, {1, 3}},           // threshold 0.175
      {0.5f, {1}},               // threshold 0.25
  };
  for (const auto& c : cases) {
    SamplingParams p = plain();
    p.min_p = c.min_p;
    Sampler s = make(p, 5);
    auto d = s.distribution(logits, {});
    ASSERT_TRUE(d.ok());
    std::vector<int32_t> ids = ids_of(*d);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, c.ids) << c.min_p;
  }
}

TEST(Sampler, TruncationIgnoresTemperature) {
  // llama.cpp order: top-p / min-p see the untempered softmax; temperature comes last.
  const std::vector<float> logits = logs_of(kProbs);
  for (const float t : {0.3f, 1.0f, 3.0f}) {
    SamplingParams p = plain(t);
    p.min_p = 0.25f;
    EXPECT_EQ(make(p, 5).distribution(logits, {})->size(), 3u) << t;
    p.min_p = 0.0f;
    p.top_p = 0.6f;
    EXPECT_EQ(make(p, 5).distribution(logits, {})->size(), 2u) << t;
  }
}

// Reference nucleus by a full sort: ids of the shortest most-likely prefix (over the top-k
// set) reaching top_p, intersected with min-p.
std::vector<int32_t> reference_kept(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < order.size()) order.resize(p.top_k);
  const double m = logits[order[0]];
  double sum = 0.0;
  std::vector<double> w;
  for (const int32_t id : order) w.push_back(portable_exp(logits[id] - m));
  // Same summation order as the sampler: id order when top-k is off, rank order when on.
  if (p.top_k > 0) {
    for (const double x : w) sum += x;
  } else {
    std::vector<double> by_id(logits.size());
    for (size_t i = 0; i < order.size(); ++i) by_id[order[i]] = w[i];
    for (const double x : by_id) sum += x;
  }
  size_t keep_p = order.size();
  if (p.top_p < 1.0f) {
    double cum = 0.0;
    for (size_t i = 0; i < order.size(); ++i) {
      cum += w[i];
      if (cum >= p.top_p * sum) {
        keep_p = i + 1;
        break;
      }
    }
  }
  size_t keep_m = 0;
  while (keep_m < order.size() && w[keep_m] >= p.min_p) ++keep_m;
  order.resize(std::min(keep_p, keep_m));
  std::sort(order.begin(), order.end());
  return order;
}

TEST(Sampler, LargeVocabularyTruncationMatchesFullSortReference) {
  Pcg32 rng(2025);
  constexpr int32_t kVocab = 50000;
  Sampler dummy = make(plain(), 1);
  for (int trial = 0; trial < 24; ++trial) {
    // Narrow logits make a nucleus of tens of thousands (exercising the growing partial
    // sort); wide ones a nucleus of a few.
    const float scale = trial % 3 == 0 ? 1.0f : (trial % 3 == 1 ? 8.0f : 30.0f);
    std::vector<float> logits = random_logits(rng, kVocab, scale);
    if (trial % 4 == 0) {
      for (float& x : logits) x = std::round(x * 4.0f) / 4.0f;  // many ties
    }
    SamplingParams p = plain(0.7f);
    p.top_p = trial % 2 == 0 ? 0.95f : 0.5f;
    p.min_p = trial % 5 == 0 ? 0.0f : 0.02f;
    p.top_k = trial % 6 == 0 ? 2000 : 0;
    Sampler s = make(p, kVocab);
    auto d = s.distribution(logits, {});
    ASSERT_TRUE(d.ok());
    std::vector<int32_t> got = ids_of(*d);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, reference_kept(logits, p)) << "trial " << trial;
    double total = 0.0;
    for (const Candidate& c : *d) total += c.p;
    EXPECT_NEAR(total, 1.0, 1e-9);
  }
}

// ---------------------------------------------------------------------------------------------
// Penalties

std::map<int32_t, float> penalized(const SamplingParams& base, const std::vector<float>& logits,
                                   const std::vector<int32_t>& history) {
  SamplingParams p = base;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  Sampler s = make(p, static_cast<int32_t>(logits.size()));
  auto d = s.distribution(logits, history);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return logits_by_id(*d);
}

const std::vector<float> kPenLogits = {2.0f, -1.0f, 0.5f, 3.0f, 0.0f};

TEST(Sampler, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  const auto l = penalized(p, kPenLogits, {0, 1, 1, 4});
  EXPECT_EQ(l.at(0), 1.0f);   // 2 / 2
  EXPECT_EQ(l.at(1), -2.0f);  // -1 * 2, once although seen twice
  EXPECT_EQ(l.at(2), 0.5f);   // unseen
  EXPECT_EQ(l.at(3), 3.0f);   // unseen
  EXPECT_EQ(l.at(4), 0.0f);   // 0 * 2
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
  SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  const auto l = penalized(p, kPenLogits, {0, 1, 1, 3, 3, 3});
  EXPECT_EQ(l.at(0), 2.0f - (0.25f + 0.5f));
  EXPECT_EQ(l.at(1), -1.0f - (0.5f + 0.5f));
  EXPECT_EQ(l.at(2), 0.5f);
  EXPECT_EQ(l.at(3), 3.0f - (0.75f + 0.5f));
  // Negative penalties encourage.
  p.presence_penalty = -1.0f;
  p.frequency_penalty = 0.0f;
  EXPECT_EQ(penalized(p, kPenLogits, {2}).at(2), 1.5f);
}

TEST(Sampler, AllPenaltiesTogetherRepetitionFirst) {
  SamplingParams p;
  p.repetition_penalty = 1.25f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.125f;
  const auto l = penalized(p, kPenLogits, {3, 1, 3});
  EXPECT_EQ(l.at(3), 3.0f / 1.25f - (2 * 0.125f + 0.5f));  // 2.4 - 0.75
  EXPECT_EQ(l.at(1), -1.0f * 1.25f - (0.125f + 0.5f));     // -1.25 - 0.625
  EXPECT_EQ(l.at(0), 2.0f);
}

TEST(Sampler, PenaltyWindowIsTheLastNTokens) {
  SamplingParams p;
  p.presence_penalty = 1.0f;
  p.penalty_last_n = 2;
  const std::vector<int32_t> history = {3, 3, 0, 1};
  auto l = penalized(p, kPenLogits, history);
  EXPECT_EQ(l.at(3), 3.0f);  // outside the window
  EXPECT_EQ(l.at(0), 1.0f);
  EXPECT_EQ(l.at(1), -2.0f);
  p.penalty_last_n = -1;  // whole history
  EXPECT_EQ(penalized(p, kPenLogits, history).at(3), 2.0f);
  p.penalty_last_n = 0;  // off
  EXPECT_EQ(penalized(p, kPenLogits, history).at(0), 2.0f);
  p.penalty_last_n = 100;  // longer than the history
  EXPECT_EQ(penalized(p, kPenLogits, history).at(3), 2.0f);
}

TEST(Sampler, PenaltiesDoNotLeakBetweenCalls) {
  SamplingParams p;
  p.frequency_penalty = 1.0f;
  p.temperature = 0.0f;
  Sampler s = make(p, 5);
  EXPECT_EQ(*s.sample(kPenLogits, std::vector<int32_t>{3, 3}), 0);  // 3 - 2 = 1 < 2
  EXPECT_EQ(*s.sample(kPenLogits, {}), 3);                          // no history, no penalty
  EXPECT_EQ(*s.sample(kPenLogits, std::vector<int32_t>{3}),
            0);  // 3 - 1 = 2 ties token 0's 2.0: lower id wins
  EXPECT_EQ(*s.sample(kPenLogits, {}), 3);
}

TEST(Sampler, PenaltiesApplyInGreedyToo) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  Sampler s = make(p, 5);
  EXPECT_EQ(*s.sample(kPenLogits, {}), 3);
  EXPECT_EQ(*s.sample(kPenLogits, std::vector<int32_t>{3}), 0);  // 3 / 2 = 1.5 < 2
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(Sampler, CreateRejectsBadParamsAndVocab) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_EQ(Sampler::create(p, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sampler::create(SamplingParams{}, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sampler::create(SamplingParams{}, -5).status().code(), StatusCode::kInvalidArgument);
}

TEST(Sampler, RejectsNanInfWrongSizeAndBadHistory) {
  for (const float t : {0.0f, 0.8f}) {
    SamplingParams p;
    p.temperature = t;
    p.repetition_penalty = 1.1f;
    Sampler s = make(p, 4);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto r = s.sample(std::vector<float>{0.0f, nan, 1.0f, 2.0f}, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("NaN"), std::string::npos);
    EXPECT_NE(r.status().message().find("token 1"), std::string::npos);
    EXPECT_FALSE(s.sample(std::vector<float>{0.0f, -kNegInf, 1.0f, 2.0f}, {}).ok());
    auto all_masked = s.sample(std::vector<float>(4, kNegInf), {});
    ASSERT_FALSE(all_masked.ok());
    EXPECT_NE(all_masked.status().message().find("masked"), std::string::npos);
    EXPECT_FALSE(s.distribution(std::vector<float>(4, kNegInf), {}).ok());
    EXPECT_FALSE(s.sample(std::vector<float>{0.0f, 1.0f, 2.0f}, {}).ok());
    const std::vector<float> ok = {0.0f, 1.0f, 2.0f, 3.0f};
    EXPECT_FALSE(s.sample(ok, std::vector<int32_t>{0, 4}).ok());
    EXPECT_FALSE(s.sample(ok, std::vector<int32_t>{-1}).ok());
    // After errors it still works, and bad history outside the window is not looked at.
    EXPECT_TRUE(s.sample(ok, std::vector<int32_t>{0, 1}).ok());
  }
}

TEST(Sampler, PenaltyOverflowIsAnError) {
  SamplingParams p;
  p.frequency_penalty = -3e38f;
  Sampler s = make(p, 2);
  EXPECT_FALSE(s.sample(std::vector<float>{1.0f, 3e38f}, std::vector<int32_t>{1, 1}).ok());
}

// ---------------------------------------------------------------------------------------------
// Golden sequences: exact draws for fixed seeds, the same on every platform.

std::vector<float> golden_logits() {
  // Exactly representable values, no libm involved.
  std::vector<float> v(48);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(static_cast<int>((i * 37 + 11) % 29) - 14) * 0.3125f;
  }
  v[5] = kNegInf;
  v[17] = kNegInf;
  return v;
}

std::vector<int32_t> run_golden(const SamplingParams& p, int n, bool feed_back) {
  const std::vector<float> logits = golden_logits();
  Sampler s = make(p, static_cast<int32_t>(logits.size()));
  std::vector<int32_t> out;
  std::vector<int32_t> history;
  for (int i = 0; i < n; ++i) {
    auto t = s.sample(logits, history);
    EXPECT_TRUE(t.ok());
    if (!t.ok()) break;
    out.push_back(*t);
    if (feed_back) history.push_back(*t);
  }
  return out;
}

TEST(SamplerGolden, DefaultParams) {
  SamplingParams p;  // T 0.8, top_k 40, top_p 0.95, min_p 0.05
  p.seed = 1234;
  const std::vector<int32_t> want = {42, 9,  31, 38, 38, 9,  42, 16, 42, 31, 41, 2, 31, 2,
                                     38, 12, 42, 42, 9,  31, 20, 42, 20, 20, 13, 2, 38, 20,
                                     27, 42, 38, 13, 42, 13, 42, 42, 16, 13, 31, 2};
  EXPECT_EQ(run_golden(p, 40, false), want);
}

TEST(SamplerGolden, NoTruncation) {
  SamplingParams p = plain(1.0f, 7);
  const std::vector<int32_t> want = {20, 20, 9,  13, 13, 42, 31, 42, 2,  42, 13, 31, 31, 38,
                                     20, 2,  20, 13, 2,  2,  20, 42, 9,  33, 31, 38, 13, 45,
                                     45, 42, 23, 2,  9,  12, 31, 42, 30, 42, 20, 9};
  EXPECT_EQ(run_golden(p, 40, false), want);
}

TEST(SamplerGolden, TopPOnlyWithPenaltiesFedBack) {
  SamplingParams p = plain(1.5f, 99);
  p.top_p = 0.9f;
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.4f;
  p.frequency_penalty = 0.2f;
  p.penalty_last_n = 16;
  const std::vector<int32_t> want = {31, 38, 42, 9,  31, 31, 2,  16, 34, 23, 1,  31, 20, 41,
                                     13, 27, 45, 20, 16, 42, 9,  13, 19, 34, 31, 38, 2,  42,
                                     13, 8,  27, 38, 2,  34, 42, 1,  20, 2,  45, 9};
  EXPECT_EQ(run_golden(p, 40, true), want);
}

}  // namespace
}  // namespace geniex::sampling
