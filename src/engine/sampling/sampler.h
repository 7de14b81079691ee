// Sampler: picks the next token from a logit vector. The chain, in llama.cpp's default order:
//   penalties (repetition, presence, frequency over the last penalty_last_n history tokens)
//   -> top-k -> top-p (on the softmax of what top-k left) -> min-p -> temperature -> draw.
// temperature == 0 is greedy: argmax of the penalized logits, ties -> lowest id.
//
// Determinism: the draw uses our Pcg32 and portable_exp, candidates are ordered by (logit
// descending, id ascending) — a total order, so nth_element/partial_sort of any standard
// library give the same sets — and every sum runs in a fixed order. The same seed, params,
// logits and history therefore give the same tokens on every platform.
//
// Cost: O(n_vocab) per call plus a partial sort for top-k / top-p; buffers are sized at
// create() and reused, so sample() never allocates (penalty_last_n == -1 with a history longer
// than any before may grow one small buffer).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/sampling/rng.h"
#include "engine/sampling/sampling_params.h"

namespace geniex::sampling {

/// One token of the final distribution.
struct Candidate {
  int32_t id = 0;
  float logit = 0.0f;  ///< after penalties, before temperature
  double p = 0.0;      ///< probability after truncation and temperature
};

class Sampler {
 public:
  /// kInvalidArgument for invalid params (see SamplingParams::validate) or n_vocab <= 0.
  static Result<Sampler> create(const SamplingParams& params, int32_t n_vocab);

  /// Draws a token id. `logits` has n_vocab entries: NaN or +inf -> kInvalidArgument; -inf
  /// masks a token; all masked -> kInvalidArgument. `history` holds previously seen tokens
  /// (oldest first; only the last penalty_last_n matter); an id outside the vocabulary ->
  /// kInvalidArgument. Errors leave the random state untouched.
  Result<int32_t> sample(std::span<const float> logits, std::span<const int32_t> history);

  /// The distribution sample() would draw from (no randomness consumed): the surviving
  /// tokens with probabilities summing to 1, in draw order (logit descending when top-k or
  /// top-p sorted them, else id ascending). Greedy gives the single argmax with p = 1. The
  /// span stays valid until the next call on this sampler.
  Result<std::span<const Candidate>> distribution(std::span<const float> logits,
                                                  std::span<const int32_t> history);

  /// Restarts the random sequence from `seed` (as if created with it).
  void reset(uint64_t seed);

  [[nodiscard]] const SamplingParams& params() const { return params_; }
  [[nodiscard]] int32_t n_vocab() const { return n_vocab_; }

 private:
  Sampler(const SamplingParams& params, int32_t n_vocab);

  /// kInvalidArgument unless `logits` has n_vocab entries, none NaN or +inf.
  Status check_logits(std::span<const float> logits) const;
  /// Checks logits/history, copies logits to work_ and applies the penalties.
  Status prepare(std::span<const float> logits, std::span<const int32_t> history);
  Status apply_penalties(std::span<const int32_t> history);
  /// Argmax of work_ (ties -> lowest id); kInvalidArgument when all are -inf.
  Result<int32_t> argmax() const;
  /// Argmax of v (ties -> lowest id); kInvalidArgument when all are -inf. v has no NaN.
  static Result<int32_t> argmax_of(std::span<const float> v);
  /// check_logits(logits) then argmax_of(logits), the check fused into the max pass (greedy
  /// decoding reads each row once less).
  Result<int32_t> checked_argmax(std::span<const float> logits) const;
  /// Runs top-k, top-p, min-p and temperature over work_; leaves the survivors in
  /// cand_[0, n) with unnormalized weights in .p and returns n. Sets total_ to their sum.
  Result<size_t> truncate();

  SamplingParams params_;
  int32_t n_vocab_ = 0;
  Pcg32 rng_;
  std::vector<float> work_;      // penalized logits
  std::vector<Candidate> cand_;  // candidate buffer, n_vocab entries
  std::vector<int32_t>
      counts_;  // per-token occurrences in the penalty window (all 0 between calls)
  std::vector<int32_t> touched_;  // tokens whose count is non-zero
  double total_ = 0.0;
};

}  // namespace geniex::sampling
