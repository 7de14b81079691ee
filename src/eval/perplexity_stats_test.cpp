#include "eval/perplexity_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "eval/kld_base_file.h"

namespace geniex::eval {
namespace {

std::vector<float> random_logits(size_t n, std::mt19937& rng, float spread) {
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<double> softmax(const std::vector<float>& l) {
  double m = l[0];
  for (float x : l) m = std::max<double>(m, x);
  double s = 0;
  for (float x : l) s += std::exp(x - m);
  std::vector<double> p(l.size());
  for (size_t i = 0; i < l.size(); ++i) p[i] = std::exp(l[i] - m) / s;
  return p;
}

std::vector<uint16_t> encode(const std::vector<float>& logits, int32_t token) {
  std::vector<uint16_t> row(static_cast<size_t>(row_words(static_cast<int64_t>(logits.size()))));
  encode_log_probs(logits, token, row);
  return row;
}

TEST(PerplexityStats, UniformModelHasPerplexityOfItsVocabulary) {
  const std::vector<float> logits(50, 0.25f);
  PerplexityStats s;
  for (int i = 0; i < 20; ++i) s.add(token_nll(logits, i % 50));
  EXPECT_NEAR(s.perplexity().value, 50.0, 1e-9);
  EXPECT_NEAR(s.perplexity().error, 0.0, 1e-5);  // float rounding of the equal NLLs
}

TEST(PerplexityStats, ErrorFollowsTheSpreadOfTheNll) {
  PerplexityStats s;
  const std::vector<double> nll = {1.0, 2.0, 3.0, 4.0};
  for (double v : nll) s.add(v);
  const double mean = 2.5, var = (1.5 * 1.5 * 2 + 0.5 * 0.5 * 2) / 4;  // population variance
  EXPECT_NEAR(s.perplexity().value, std::exp(mean), 1e-12);
  EXPECT_NEAR(s.perplexity().error, std::sqrt(var / 3) * std::exp(mean), 1e-12);
}

TEST(KldStats, SameLogitsGiveNoDivergence) {
  std::mt19937 rng(5);
  KldStats s;
  for (int pos = 0; pos < 200; ++pos) {
    const auto logits = random_logits(300, rng, 3.0f);
    // The likeliest next token, as in text the model knows (an unlikely one may be clipped at the
    // base file's e^-16 floor, which is the format's own loss).
    const auto token =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    s.add(logits, encode(logits, token), token);
  }
  const KldReport r = s.full();
  EXPECT_EQ(r.count, 200);
  EXPECT_LT(r.kld.value, 1e-5) << "only the 16-bit storage of the base separates them";
  EXPECT_NEAR(r.same_top.value, 1.0, 0.0);
  EXPECT_NEAR(r.ln_ppl_ratio.value, 0.0, 1e-4);
  EXPECT_NEAR(r.ppl.value, r.ppl_base.value, 1e-3 * r.ppl.value);
  EXPECT_GT(r.ln_ppl_correlation, 0.999);
  EXPECT_LT(std::abs(r.delta_p.value), 1e-4);
}

TEST(KldStats, DivergenceMatchesADirectComputation) {
  std::mt19937 rng(11);
  KldStats s;
  double want = 0;
  int same = 0;
  const int n_pos = 150;
  for (int pos = 0; pos < n_pos; ++pos) {
    const auto base = random_logits(64, rng, 2.0f);
    auto ours = base;
    std::normal_distribution<float> noise(0.0f, 0.3f);
    for (auto& x : ours) x += noise(rng);
    const auto p = softmax(base), q = softmax(ours);
    double kl = 0;
    for (size_t i = 0; i < p.size(); ++i) kl += p[i] * (std::log(p[i]) - std::log(q[i]));
    want += kl;
    const auto argmax = [](const std::vector<double>& v) {
      return std::max_element(v.begin(), v.end()) - v.begin();
    };
    same += argmax(p) == argmax(q);
    s.add(ours, encode(base, pos % 64), pos % 64);
  }
  const KldReport r = s.full();
  EXPECT_NEAR(r.kld.value, want / n_pos, 2e-4 * (1 + want / n_pos));
  EXPECT_GT(r.kld.error, 0.0);
  EXPECT_NEAR(r.same_top.value, static_cast<double>(same) / n_pos, 1e-12);
  const auto k = [&](const char* key) { return quantile_value(r.kld_quantiles, key); };
  const auto d = [&](const char* key) { return quantile_value(r.delta_p_quantiles, key); };
  EXPECT_LE(k("min"), k("median"));
  EXPECT_LE(k("median"), k("99"));
  EXPECT_LE(k("99"), k("max"));
  EXPECT_LE(d("min"), d("median"));
  EXPECT_LE(d("median"), d("max"));
}

TEST(KldStats, PercentilesInterpolateBetweenOrderStatistics) {
  const std::vector<float> v = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 4.0);
  EXPECT_NEAR(percentile(v, 0.5), 2.0, 1e-6);
  EXPECT_NEAR(percentile(v, 0.9), 3.6, 1e-6);
  EXPECT_NEAR(percentile(v, 0.1), 0.4, 1e-6);
}

}  // namespace
}  // namespace geniex::eval
