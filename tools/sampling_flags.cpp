#include "sampling_flags.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/status.h"

namespace geniex::cli {

void add_sampling_flags(CLI::App* c, SamplingOptions& o) {
  c->add_option("-n,--max-tokens,--n-predict", o.max_tokens,
                "tokens to generate at most (-1 = until end of generation or a full context)")
      ->capture_default_str();
  c->add_option("--temp,--temperature", o.temp, "temperature (0 = greedy)")->capture_default_str();
  c->add_option("--top-k", o.top_k, "top-k (0 = off)")->capture_default_str();
  c->add_option("--top-p", o.top_p, "top-p (1 = off)")->capture_default_str();
  c->add_option("--min-p", o.min_p, "min-p (0 = off)")->capture_default_str();
  c->add_option("--repeat-penalty", o.repeat_penalty, "repetition penalty (1 = off)")
      ->capture_default_str();
  c->add_option("--presence-penalty", o.presence_penalty, "presence penalty")
      ->capture_default_str();
  c->add_option("--frequency-penalty", o.frequency_penalty, "frequency penalty")
      ->capture_default_str();
  c->add_option("--repeat-last-n", o.repeat_last_n, "penalty window (-1 = all)")
      ->capture_default_str();
  c->add_option("-s,--seed", o.seed, "sampler seed (-1 = random)")->capture_default_str();
  c->add_option("--stop", o.stop, "stop string (repeatable)");
  c->add_flag("--ignore-eos", o.ignore_eos, "do not stop at end-of-generation tokens");
}

Status validate_sampling(const SamplingOptions& o) {
  if (o.max_tokens < -1) {
    return invalid_argument("-n/--max-tokens must be >= 0, or -1 for no limit; got " +
                            std::to_string(o.max_tokens));
  }
  if (!std::isfinite(o.temp) || o.temp < 0) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", static_cast<double>(o.temp));
    return invalid_argument(std::string("--temp must be >= 0, got ") + got);
  }
  if (o.top_k < 0) return invalid_argument("--top-k must be >= 0 (0 = off)");
  if (!(o.top_p > 0 && o.top_p <= 1)) return invalid_argument("--top-p must be in (0, 1]");
  if (!(o.min_p >= 0 && o.min_p <= 1)) return invalid_argument("--min-p must be in [0, 1]");
  if (!std::isfinite(o.repeat_penalty) || o.repeat_penalty <= 0) {
    return invalid_argument("--repeat-penalty must be > 0 (1 = off)");
  }
  if (!std::isfinite(o.presence_penalty) || !std::isfinite(o.frequency_penalty)) {
    return invalid_argument("--presence-penalty and --frequency-penalty must be finite");
  }
  if (o.repeat_last_n < -1) return invalid_argument("--repeat-last-n must be >= -1 (-1 = all)");
  if (o.seed < -1 || o.seed > static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
    return invalid_argument("-s/--seed must be in [0, 4294967295], or -1 for a random seed");
  }
  return Status();
}

GenerationConfig config_of(const SamplingOptions& o) {
  GenerationConfig c;
  c.max_tokens = o.max_tokens < 0 ? std::numeric_limits<int32_t>::max() : o.max_tokens;
  c.temperature = o.temp;
  c.top_k = o.top_k;
  c.top_p = o.top_p;
  c.min_p = o.min_p;
  c.repetition_penalty = o.repeat_penalty;
  c.presence_penalty = o.presence_penalty;
  c.frequency_penalty = o.frequency_penalty;
  c.penalty_last_n = o.repeat_last_n;
  if (o.seed >= 0) c.seed = static_cast<uint64_t>(o.seed);
  c.stop = o.stop;
  c.ignore_eos = o.ignore_eos;
  return c;
}

}  // namespace geniex::cli
