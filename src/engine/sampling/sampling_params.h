// SamplingParams: the knobs of one generation's token sampler (llama.cpp / OpenAI meanings).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace geniex::sampling {

struct SamplingParams {
  /// Softmax temperature applied last, after truncation; 0 = greedy (argmax, ties -> lowest
  /// id, no randomness). Must be finite and >= 0.
  float temperature = 0.8f;
  /// Keep the k most likely tokens; 0 = off. Must be >= 0; values above n_vocab keep all.
  int32_t top_k = 40;
  /// Nucleus: keep the smallest most-likely set whose probability mass is >= top_p, on the
  /// softmax of the tokens top-k left. In (0, 1]; 1 = off.
  float top_p = 0.95f;
  /// Drop tokens whose probability is below min_p * (the most likely token's). In [0, 1);
  /// 0 = off.
  float min_p = 0.05f;
  /// CTRL / llama.cpp repetition penalty on each token seen in the window: a positive logit
  /// is divided by it, a non-positive one multiplied. Finite, > 0; 1 = off.
  float repetition_penalty = 1.0f;
  /// OpenAI presence penalty: subtracted once from the logit of every token seen in the
  /// window. Finite (OpenAI allows [-2, 2]); 0 = off.
  float presence_penalty = 0.0f;
  /// OpenAI frequency penalty: subtracted count times (occurrences in the window). Finite;
  /// 0 = off.
  float frequency_penalty = 0.0f;
  /// How many of the most recent history tokens the penalties look at; 0 = none (penalties
  /// off), -1 = all of the history given. Must be >= -1.
  int32_t penalty_last_n = 64;
  /// Seed of the sampler's Pcg32; the same seed, params, logits and history give the same
  /// tokens on every platform.
  uint64_t seed = 0;

  /// kInvalidArgument naming the first offending field and its value, or OK.
  [[nodiscard]] Status validate() const;

  /// Whether any of the three penalties changes logits.
  [[nodiscard]] bool has_penalties() const {
    return penalty_last_n != 0 &&
           (repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
  }
};

}  // namespace geniex::sampling
