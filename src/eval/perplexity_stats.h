// Perplexity and KL-divergence statistics over scored positions, computed as llama-perplexity
// computes them (same sums, same uncertainties, same percentiles), so the two tools' reports
// can be compared line by line.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace geniex::eval {

/// A value and its standard error.
struct Estimate {
  double value = 0;
  double error = 0;
};

/// Negative log-likelihood of `token` under the softmax of `logits` (double precision sum).
double token_nll(std::span<const float> logits, int32_t token);

/// Running perplexity of the scored tokens.
class PerplexityStats {
 public:
  void add(double nll) {
    nll_ += nll;
    nll2_ += nll * nll;
    ++count_;
  }
  [[nodiscard]] int64_t count() const { return count_; }
  /// exp(mean NLL) and its error (zero for fewer than two values).
  [[nodiscard]] Estimate perplexity() const;

 private:
  double nll_ = 0, nll2_ = 0;
  int64_t count_ = 0;
};

/// One order statistic of a sample: `key` is "max", "min", "median" or the percent ("99.9").
struct Quantile {
  std::string_view key;
  double fraction = 0;  ///< 1 = maximum, 0.5 = median, 0 = minimum
  double value = 0;
};

/// The value of `key` in `q` (0 when absent).
double quantile_value(std::span<const Quantile> q, std::string_view key);

/// The KL-divergence report: llama-perplexity --kl-divergence's figures.
struct KldReport {
  int64_t count = 0;
  Estimate ppl, ppl_base;               ///< PPL(Q), PPL(base)
  double ln_ppl_correlation = 0;        ///< Cor(ln PPL(Q), ln PPL(base))
  Estimate ln_ppl_ratio;                ///< ln(PPL(Q)/PPL(base))
  Estimate ppl_ratio, ppl_diff;         ///< PPL(Q)/PPL(base), PPL(Q) - PPL(base)
  Estimate kld;                         ///< mean KL(base || Q) per position
  std::vector<Quantile> kld_quantiles;  ///< max, 99.9 .. 0.1, min, as llama.cpp prints them
  Estimate delta_p;                     ///< mean p(token) - p_base(token)
  std::vector<Quantile> delta_p_quantiles;
  Estimate delta_p_rms;
  Estimate same_top;  ///< fraction of positions whose argmax agrees
};

/// One scored position compared with the base.
struct KldPoint {
  float nll = 0;       ///< ours, of the text's next token
  float nll_base = 0;  ///< the base's
  double kld = 0;      ///< KL(base || ours) over the base's support above e^-16
  bool same_top = false;
  float p_diff = 0;  ///< p(token) - p_base(token)
};

/// `logits`: our row; `base_row`: the stored row (row_words(n_vocab) words); `token`: the
/// next token of the text. Pure: rows can be measured in parallel and added in order.
KldPoint kld_point(std::span<const float> logits, std::span<const uint16_t> base_row,
                   int32_t token);

/// Accumulates KL(base || ours) position by position against stored base rows.
class KldStats {
 public:
  void add(const KldPoint& p);
  void add(std::span<const float> logits, std::span<const uint16_t> base_row, int32_t token) {
    add(kld_point(logits, base_row, token));
  }
  [[nodiscard]] int64_t count() const { return count_; }
  /// The summary so far; percentiles are filled only in full(), as llama.cpp prints them only
  /// at the end.
  [[nodiscard]] KldReport running() const;
  [[nodiscard]] KldReport full() const;

 private:
  double nll_ = 0, nll2_ = 0, nll_base_ = 0, nll_base2_ = 0, nll_nll_base_ = 0;
  double kld_ = 0, kld2_ = 0, p_diff_ = 0, p_diff2_ = 0, p_diff4_ = 0;
  int64_t same_top_ = 0, count_ = 0;
  std::vector<float> kld_values_, p_diff_values_;
};

/// Linear interpolation between order statistics of sorted `values` (llama.cpp's rule).
double percentile(std::span<const float> sorted, double fraction);

}  // namespace geniex::eval
