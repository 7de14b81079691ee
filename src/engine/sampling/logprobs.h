// Log-probabilities of the raw model distribution (log-softmax of the logits, no penalties,
// truncation or temperature), for OpenAI's `logprobs` / `top_logprobs`.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace geniex::sampling {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;  ///< natural log; -inf for a masked token
};

/// The k most likely tokens, most likely first (ties -> lower id), with their log-softmax.
/// k is clamped to logits.size(). kInvalidArgument for k < 0, empty logits, a NaN or +inf
/// logit, or every logit -inf. O(n log k), allocates only the result.
Result<std::vector<TokenLogprob>> top_logprobs(std::span<const float> logits, int k);

/// log softmax(logits)[id]. Errors as top_logprobs, plus id outside [0, logits.size()).
Result<float> logprob_of(std::span<const float> logits, int32_t id);

}  // namespace geniex::sampling
