#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/sampling/portable_exp.h"

namespace geniex::sampling {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

/// Total order of candidates: more likely first, ties -> lower id first.
bool more_likely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

/// First top-p ranking batch; each further batch is 4x larger.
constexpr size_t kFirstNucleusBatch = 64;

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      rng_(params.seed),
      work_(static_cast<size_t>(n_vocab)),
      cand_(static_cast<size_t>(n_vocab)) {
  if (params_.has_penalties()) {
    counts_.assign(static_cast<size_t>(n_vocab), 0);
    touched_.reserve(params_.penalty_last_n > 0 ? static_cast<size_t>(params_.penalty_last_n)
                                                : 256);
  }
}

Result<Sampler> Sampler::create(const SamplingParams& params, int32_t n_vocab) {
  GENIEX_TRY(params.validate());
  if (n_vocab <= 0) {
    return invalid_argument("sampler: n_vocab = " + std::to_string(n_vocab) + " must be > 0");
  }
  return Sampler(params, n_vocab);
}

void Sampler::reset(uint64_t seed) {
  params_.seed = seed;
  rng_.seed_with(seed);
}

Status Sampler::check_logits(std::span<const float> logits) const {
  if (logits.size() != static_cast<size_t>(n_vocab_)) {
    return invalid_argument("sampler: got " + std::to_string(logits.size()) +
                            " logits, expected n_vocab = " + std::to_string(n_vocab_));
  }
  // Branch-free scan (vectorizes); the offending index is looked up only on failure.
  bool bad = false;
  for (const float v : logits) bad |= !(v < kPosInf);  // NaN or +inf
  if (bad) {
    for (size_t i = 0; i < logits.size(); ++i) {
      if (!(logits[i] < kPosInf)) {
        return invalid_argument("sampler: logit of token " + std::to_string(i) + " is " +
                                (std::isnan(logits[i]) ? "NaN" : "+inf"));
      }
    }
  }
  return Status::ok_status();
}

Status Sampler::prepare(std::span<const float> logits, std::span<const int32_t> history) {
  GENIEX_TRY(check_logits(logits));
  std::copy(logits.begin(), logits.end(), work_.begin());
  if (params_.has_penalties()) GENIEX_TRY(apply_penalties(history));
  return Status::ok_status();
}

Status Sampler::apply_penalties(std::span<const int32_t> history) {
  size_t window = history.size();
  if (params_.penalty_last_n >= 0) {
    window = std::min(window, static_cast<size_t>(params_.penalty_last_n));
  }
  const std::span<const int32_t> recent = history.subspan(history.size() - window);
  for (const int32_t t : recent) {
    if (t < 0 || t >= n_vocab_) {
      return invalid_argument("sampler: history token " + std::to_string(t) +
                              " is outside the vocabulary [0, " + std::to_string(n_vocab_) + ")");
    }
  }
  touched_.clear();
  for (const int32_t t : recent) {
    if (counts_[t]++ == 0) touched_.push_back(t);
  }
  const float rep = params_.repetition_penalty;
  const float presence = params_.presence_penalty;
  const float frequency = params_.frequency_penalty;
  int32_t overflowed = -1;
  for (const int32_t t : touched_) {
    float& v = work_[t];
    // llama.cpp (llama_sampler_penalties_apply): repetition first, then OpenAI's penalties.
    if (rep != 1.0f) v = v <= 0.0f ? v * rep : v / rep;
    v -= static_cast<float>(counts_[t]) * frequency + presence;
    if (std::isnan(v) || v == kPosInf) overflowed = t;
    counts_[t] = 0;  // leave counts_ all zero for the next call
  }
  if (overflowed >= 0) {
    return invalid_argument("sampler: penalties made the logit of token " +
                            std::to_string(overflowed) + " non-finite");
  }
  return Status::ok_status();
}

Result<int32_t> Sampler::argmax() const { return argmax_of(work_); }

namespace {

// The first maximum of v in one pass: v in chunks of kChunk, each chunk's maximum in 8
// independent lanes (a max reduction the compiler vectorizes; exact when v has no NaN), and the
// chunk that first reaches the running maximum kept ('>' only); then the first index of that
// maximum inside that chunk. The same index as a sequential first-maximum scan with '>', and one
// pass over the row instead of a max pass plus a search (a 262,144-token row, 8 of them per
// step of an 8-stream batch). kCheck: also whether any entry is NaN or +inf, in the same pass
// (*bad). An all -inf (or empty) row: best stays -inf and `at` is meaningless.
struct FirstMax {
  float best;
  size_t at;
};

template <bool kCheck>
FirstMax first_max_scan(std::span<const float> v, bool* bad) {
  constexpr size_t kLanes = 8, kChunk = 64;
  const size_t n = v.size(), whole = n / kChunk * kChunk;
  float best = kNegInf;
  size_t chunk_at = 0;
  bool seen[kLanes] = {};
  for (size_t c = 0; c < whole; c += kChunk) {
    float lane[kLanes];
    std::fill(lane, lane + kLanes, kNegInf);
    for (size_t i = c; i < c + kChunk; i += kLanes) {
      for (size_t l = 0; l < kLanes; ++l) {
        if constexpr (kCheck) seen[l] |= !(v[i + l] < kPosInf);
        lane[l] = lane[l] < v[i + l] ? v[i + l] : lane[l];
      }
    }
    float m = lane[0];
    for (size_t l = 1; l < kLanes; ++l) m = std::max(m, lane[l]);
    if (m > best) {
      best = m;
      chunk_at = c;
    }
  }
  size_t at = chunk_at;
  if (best > kNegInf) {
    while (!(v[at] == best)) ++at;  // inside the chunk: it holds best
  }
  for (size_t i = whole; i < n; ++i) {
    if constexpr (kCheck) seen[0] |= !(v[i] < kPosInf);
    if (v[i] > best) {
      best = v[i];
      at = i;
    }
  }
  if constexpr (kCheck) {
    bool any = false;
    for (size_t l = 0; l < kLanes; ++l) any |= seen[l];
    *bad = any;
  }
  return {best, at};
}

// The index of the first maximum, or an error when every token is masked.
Result<int32_t> first_max(FirstMax m) {
  if (!(m.best > kNegInf))
    return invalid_argument("sampler: every token is masked (all logits -inf)");
  return static_cast<int32_t>(m.at);
}

}  // namespace

Result<int32_t> Sampler::checked_argmax(std::span<const float> logits) const {
  if (logits.size() != static_cast<size_t>(n_vocab_)) GENIEX_TRY(check_logits(logits));
  // check_logits and argmax_of in one pass; a bad row is reported by check_logits' own scan.
  bool bad = false;
  const FirstMax m = first_max_scan<true>(logits, &bad);
  if (bad) GENIEX_TRY(check_logits(logits));  // names the first bad token
  return first_max(m);
}

Result<int32_t> Sampler::argmax_of(std::span<const float> v) {
  // A 262,144-token vocabulary takes ~0.1 ms less per call than a sequential '>' scan (one per
  // stream and step in the server).
  return first_max(first_max_scan<false>(v, nullptr));
}

Result<size_t> Sampler::truncate() {
  const auto first = cand_.begin();
  const auto at = [&](size_t i) { return first + static_cast<ptrdiff_t>(i); };
  const auto k = static_cast<size_t>(params_.top_k);
  size_t n = 0;
  if (k > 0 && k < static_cast<size_t>(n_vocab_)) {
    // Top-k by one pass with a k-heap whose front is the least likely kept token: O(n_vocab)
    // comparisons plus O(log k) per replacement. The kept set is unique (total order).
    for (int32_t i = 0; i < n_vocab_; ++i) {
      const Candidate c{i, work_[i], 0.0};
      if (c.logit == kNegInf) continue;
      if (n < k) {
        cand_[n++] = c;
        std::push_heap(first, at(n), more_likely);
      } else if (more_likely(c, cand_[0])) {
        std::pop_heap(first, at(n), more_likely);
        cand_[n - 1] = c;
        std::push_heap(first, at(n), more_likely);
      }
    }
  } else {
    for (int32_t i = 0; i < n_vocab_; ++i) {
      if (work_[i] != kNegInf) cand_[n++] = Candidate{i, work_[i], 0.0};
    }
  }
  if (n == 0) return invalid_argument("sampler: every token is masked (all logits -inf)");
  bool sorted = false;
  if (k > 0) {
    std::sort(first, at(n), more_likely);
    sorted = true;
  }
  float max_logit = cand_[0].logit;
  if (!sorted) {
    for (size_t i = 1; i < n; ++i) max_logit = std::max(max_logit, cand_[i].logit);
  }

  // Softmax weights relative to the maximum (which survives every step below with weight 1).
  const double m = max_logit;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cand_[i].p = portable_exp(static_cast<double>(cand_[i].logit) - m);
    sum += cand_[i].p;
  }

  // Min-p keeps {w >= min_p}, a most-likely prefix, whatever top-p keeps (also a prefix, and
  // its mass is over the top-k set, i.e. `sum`). So filtering first gives the same result as
  // llama.cpp's top-p-then-min-p, and top-p then usually sorts only a handful of survivors.
  if (params_.min_p > 0.0f) {
    const double threshold = params_.min_p;
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (cand_[i].p >= threshold) cand_[kept++] = cand_[i];
    }
    n = kept;
  }

  // Top-p: the shortest most-likely prefix whose mass reaches top_p of `sum`. Unsorted
  // candidates are ranked in growing batches (nth_element on the rest, then sort the batch),
  // so a nucleus of K tokens costs O(log K) linear selections plus O(K log K), not a full sort.
  if (params_.top_p < 1.0f) {
    const double target = static_cast<double>(params_.top_p) * sum;
    size_t ranked = sorted ? n : 0;  // cand_[0, ranked) holds the most likely, sorted
    size_t batch = kFirstNucleusBatch;
    double cum = 0.0;
    size_t i = 0;
    size_t cut = 0;
    for (;;) {
      if (ranked < n) {
        const size_t end = std::min(n, ranked + batch);
        if (end < n) std::nth_element(at(ranked), at(end), at(n), more_likely);
        std::sort(at(ranked), at(end), more_likely);
        ranked = end;
        batch *= 4;
      }
      for (; i < ranked; ++i) {
        cum += cand_[i].p;
        if (cum >= target) {
          cut = i + 1;
          break;
        }
      }
      if (cut > 0 || ranked == n) break;
    }
    if (cut > 0) n = cut;  // else rounding kept the mass below target: keep everything
  }

  // Temperature, last: weights exp((l - max) / T) over the survivors.
  const double t = params_.temperature;
  if (t != 1.0) {
    sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
      cand_[i].p = portable_exp((static_cast<double>(cand_[i].logit) - m) / t);
      sum += cand_[i].p;
    }
  } else {
    sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += cand_[i].p;
  }
  total_ = sum;
  return n;
}

Result<int32_t> Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  if (params_.temperature == 0.0f && !params_.has_penalties()) {
    // Greedy without penalties reads the logits in place (no 1 MiB copy per token on Gemma).
    return checked_argmax(logits);
  }
  GENIEX_TRY(prepare(logits, history));
  if (params_.temperature == 0.0f) return argmax();
  GENIEX_ASSIGN_OR_RETURN(const size_t n, truncate());
  const double target = rng_.next_unit_double() * total_;
  double cum = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < n; ++i) {
    if (cand_[i].p <= 0.0) continue;
    cum += cand_[i].p;
    if (target < cum) return cand_[i].id;
    last_positive = i;
  }
  return cand_[last_positive].id;  // target rounded up to the total
}

Result<std::span<const Candidate>> Sampler::distribution(std::span<const float> logits,
                                                         std::span<const int32_t> history) {
  GENIEX_TRY(prepare(logits, history));
  if (params_.temperature == 0.0f) {
    GENIEX_ASSIGN_OR_RETURN(const int32_t id, argmax());
    cand_[0] = Candidate{id, work_[id], 1.0};
    return std::span<const Candidate>(cand_.data(), 1);
  }
  GENIEX_ASSIGN_OR_RETURN(const size_t n, truncate());
  for (size_t i = 0; i < n; ++i) cand_[i].p /= total_;
  return std::span<const Candidate>(cand_.data(), n);
}

}  // namespace geniex::sampling
