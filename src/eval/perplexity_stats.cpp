#include "eval/perplexity_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace geniex::eval {
namespace {

// Mean of the values whose sum and sum of squares are given, with its standard error
// (zero for ten values or fewer, as llama.cpp reports it).
Estimate mean_and_error(double sum, double sum2, int64_t count) {
  if (count < 1) return {};
  const double mean = sum / static_cast<double>(count);
  double var = sum2 / static_cast<double>(count) - mean * mean;
  const double err = var > 0 && count > 10 ? std::sqrt(var / static_cast<double>(count - 1)) : 0.0;
  return {mean, err};
}

double covariance(double sum_a, double sum_b, double sum_ab, int64_t count) {
  if (count < 10) return 0.0;
  const auto n = static_cast<double>(count);
  return (sum_ab / n - (sum_a / n) * (sum_b / n)) / (n - 1);
}

struct Softmax {
  float max_logit = 0;
  size_t argmax = 0;
  float log_sum_exp = 0;
};

Softmax softmax_of(std::span<const float> logits) {
  Softmax s;
  s.max_logit = logits[0];
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > s.max_logit) {
      s.max_logit = logits[i];
      s.argmax = i;
    }
  }
  double sum_exp = 0.0;
  for (float l : logits) sum_exp += std::exp(l - s.max_logit);
  s.log_sum_exp = static_cast<float>(std::log(sum_exp));
  return s;
}

}  // namespace

double token_nll(std::span<const float> logits, int32_t token) {
  float max_logit = logits[0];
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum_exp = 0.0;
  for (float l : logits) sum_exp += std::exp(l - max_logit);
  return -(static_cast<double>(logits[static_cast<size_t>(token)] - max_logit) - std::log(sum_exp));
}

Estimate PerplexityStats::perplexity() const {
  if (count_ < 1) return {};
  const auto n = static_cast<double>(count_);
  const double mean = nll_ / n;
  const double ppl = std::exp(mean);
  const double var = nll2_ / n - mean * mean;
  const double err = var > 0 && count_ > 1 ? std::sqrt(var / (n - 1)) * ppl : 0.0;
  return {ppl, err};
}

KldPoint kld_point(std::span<const float> logits, std::span<const uint16_t> base_row,
                   int32_t token) {
  const Softmax s = softmax_of(logits);
  float scale = 0, min_log_prob = 0;
  std::memcpy(&scale, base_row.data(), sizeof(float));
  std::memcpy(&min_log_prob, base_row.data() + 2, sizeof(float));
  const uint16_t* codes = base_row.data() + 4;
  const auto tok = static_cast<size_t>(token);

  KldPoint p;
  p.nll = s.max_logit + s.log_sum_exp - logits[tok];
  p.nll_base = -(scale * codes[tok] + min_log_prob);
  // KL(base || ours) = sum_i p_base(i) (log p_base(i) - log p(i)), over the base's support
  // above e^-16 (what the 16-bit rows keep).
  const float log_norm = s.max_logit + s.log_sum_exp;
  double kld = 0;
  size_t argmax_base = 0;
  float top_base = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float lp_base = scale * codes[i] + min_log_prob;
    if (i == 0 || lp_base > top_base) {
      top_base = lp_base;
      argmax_base = i;
    }
    if (lp_base > -16.0f) kld += std::exp(lp_base) * (lp_base - logits[i] + log_norm);
  }
  p.kld = kld;
  p.same_top = s.argmax == argmax_base;
  p.p_diff = std::exp(-p.nll) - std::exp(-p.nll_base);
  return p;
}

void KldStats::add(const KldPoint& p) {
  nll_ += p.nll;
  nll2_ += static_cast<double>(p.nll) * p.nll;
  nll_base_ += p.nll_base;
  nll_base2_ += static_cast<double>(p.nll_base) * p.nll_base;
  nll_nll_base_ += static_cast<double>(p.nll) * p.nll_base;
  kld_ += p.kld;
  kld2_ += p.kld * p.kld;
  if (p.same_top) ++same_top_;
  ++count_;
  p_diff_ += p.p_diff;
  const double p_diff2 = static_cast<double>(p.p_diff) * p.p_diff;
  p_diff2_ += p_diff2;
  p_diff4_ += p_diff2 * p_diff2;
  kld_values_.push_back(static_cast<float>(p.kld));
  p_diff_values_.push_back(p.p_diff);
}

double percentile(std::span<const float> sorted, double fraction) {
  if (sorted.empty()) return 0;
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  const auto f = static_cast<float>(fraction);
  float p = f * static_cast<float>(sorted.size() - 1);
  const auto ip = static_cast<size_t>(p);
  p -= static_cast<float>(ip);
  return (1 - p) * sorted[ip] + p * sorted[std::min(ip + 1, sorted.size() - 1)];
}

KldReport KldStats::running() const {
  KldReport r;
  r.count = count_;
  if (count_ == 0) return r;
  const Estimate log_ppl = mean_and_error(nll_, nll2_, count_);
  const Estimate log_base = mean_and_error(nll_base_, nll_base2_, count_);
  const double cov = covariance(nll_, nll_base_, nll_nll_base_, count_);
  r.ppl = {std::exp(log_ppl.value), std::exp(log_ppl.value) * log_ppl.error};
  r.ppl_base = {std::exp(log_base.value), std::exp(log_base.value) * log_base.error};
  const double denom = log_ppl.error * log_base.error;
  r.ln_ppl_correlation = denom > 0 ? cov / denom : 0.0;
  r.ln_ppl_ratio = {log_ppl.value - log_base.value,
                    std::sqrt(std::max(0.0, log_ppl.error * log_ppl.error +
                                                log_base.error * log_base.error - 2.0 * cov))};
  r.ppl_ratio = {std::exp(r.ln_ppl_ratio.value),
                 std::exp(r.ln_ppl_ratio.value) * r.ln_ppl_ratio.error};
  const double ppl_cov = r.ppl.value * r.ppl_base.value * cov;
  r.ppl_diff = {r.ppl.value - r.ppl_base.value,
                std::sqrt(std::max(0.0, r.ppl.error * r.ppl.error +
                                            r.ppl_base.error * r.ppl_base.error - 2.0 * ppl_cov))};
  r.kld = mean_and_error(kld_, kld2_, count_);
  r.delta_p = mean_and_error(p_diff_, p_diff2_, count_);
  const Estimate mse = mean_and_error(p_diff2_, p_diff4_, count_);
  const double rms = std::sqrt(mse.value);
  r.delta_p_rms = {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
  const double top = static_cast<double>(same_top_) / static_cast<double>(count_);
  r.same_top = {top,
                count_ > 1 ? std::sqrt(top * (1.0 - top) / static_cast<double>(count_ - 1)) : 0.0};
  return r;
}

double quantile_value(std::span<const Quantile> q, std::string_view key) {
  for (const Quantile& x : q) {
    if (x.key == key) return x.value;
  }
  return 0;
}

namespace {

// The order statistics llama.cpp prints, of `values` (sorted here).
std::vector<Quantile> quantiles(std::vector<float> values,
                                std::initializer_list<std::pair<std::string_view, double>> want) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  std::vector<Quantile> out;
  for (const auto& [key, fraction] : want) {
    // The median is the mean of the middle two; the rest interpolate (max at 1, min at 0).
    const double v = key == "median"
                         ? (n % 2 == 0 ? 0.5 * (values[n / 2] + values[n / 2 - 1]) : values[n / 2])
                         : percentile(values, fraction);
    out.push_back({key, fraction, v});
  }
  return out;
}

}  // namespace

KldReport KldStats::full() const {
  KldReport r = running();
  if (count_ == 0) return r;
  r.kld_quantiles = quantiles(kld_values_, {{"max", 1.0},
                                            {"99.9", 0.999},
                                            {"99", 0.990},
                                            {"95", 0.950},
                                            {"90", 0.900},
                                            {"median", 0.5},
                                            {"10", 0.100},
                                            {"5", 0.050},
                                            {"1", 0.010},
                                            {"0.1", 0.001},
                                            {"min", 0.0}});
  r.delta_p_quantiles = quantiles(p_diff_values_, {{"max", 1.0},
                                                   {"99.9", 0.999},
                                                   {"99", 0.990},
                                                   {"95", 0.950},
                                                   {"90", 0.900},
                                                   {"75", 0.750},
                                                   {"median", 0.5},
                                                   {"25", 0.250},
                                                   {"10", 0.100},
                                                   {"5", 0.050},
                                                   {"1", 0.010},
                                                   {"0.1", 0.001},
                                                   {"min", 0.0}});
  return r;
}

}  // namespace geniex::eval
