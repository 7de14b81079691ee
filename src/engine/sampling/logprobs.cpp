#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/sampling/portable_exp.h"

namespace geniex::sampling {
namespace {

/// max + log(sum exp(l - max)): the log of the softmax denominator.
Result<double> log_sum_exp(std::span<const float> logits) {
  if (logits.empty()) return invalid_argument("logprobs: empty logits");
  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      return invalid_argument("logprobs: logit of token " + std::to_string(i) + " is " +
                              (std::isnan(v) ? "NaN" : "+inf"));
    }
    max_logit = std::max(max_logit, v);
  }
  if (max_logit == -std::numeric_limits<float>::infinity()) {
    return invalid_argument("logprobs: every token is masked (all logits -inf)");
  }
  const double m = max_logit;
  double sum = 0.0;
  for (const float v : logits) sum += portable_exp(static_cast<double>(v) - m);
  return m + std::log(sum);
}

float to_logprob(float logit, double lse) {
  return static_cast<float>(static_cast<double>(logit) - lse);
}

}  // namespace

Result<std::vector<TokenLogprob>> top_logprobs(std::span<const float> logits, int k) {
  if (k < 0) return invalid_argument("logprobs: k = " + std::to_string(k) + " must be >= 0");
  GENIEX_ASSIGN_OR_RETURN(const double lse, log_sum_exp(logits));
  const size_t keep = std::min(static_cast<size_t>(k), logits.size());
  std::vector<TokenLogprob> top;
  if (keep == 0) return top;
  top.reserve(keep);
  // `more` is the total order "more likely, ties -> lower id"; the heap keeps the least
  // likely of the current top at its front.
  const auto more = [&](const TokenLogprob& a, const TokenLogprob& b) {
    const float la = logits[static_cast<size_t>(a.id)];
    const float lb = logits[static_cast<size_t>(b.id)];
    return la > lb || (la == lb && a.id < b.id);
  };
  for (size_t i = 0; i < logits.size(); ++i) {
    const TokenLogprob c{static_cast<int32_t>(i), 0.0f};
    if (top.size() < keep) {
      top.push_back(c);
      std::push_heap(top.begin(), top.end(), more);
    } else if (more(c, top.front())) {
      std::pop_heap(top.begin(), top.end(), more);
      top.back() = c;
      std::push_heap(top.begin(), top.end(), more);
    }
  }
  std::sort_heap(top.begin(), top.end(), more);
  for (TokenLogprob& t : top) t.logprob = to_logprob(logits[static_cast<size_t>(t.id)], lse);
  return top;
}

Result<float> logprob_of(std::span<const float> logits, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= logits.size()) {
    return invalid_argument("logprobs: token " + std::to_string(id) + " is outside [0, " +
                            std::to_string(logits.size()) + ")");
  }
  GENIEX_ASSIGN_OR_RETURN(const double lse, log_sum_exp(logits));
  return to_logprob(logits[static_cast<size_t>(id)], lse);
}

}  // namespace geniex::sampling
