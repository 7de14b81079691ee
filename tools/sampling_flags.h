// Sampling flags shared by run, chat and serve (serve uses them as its request defaults).
// Names follow llama.cpp where the two overlap: -n/--n-predict (-1 = no limit), -s/--seed,
// --temp/--temperature, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex::cli {

struct SamplingOptions {
  int32_t max_tokens = 256;  ///< -1 = until end of generation or the context is full
  float temp = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t repeat_last_n = 64;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

void add_sampling_flags(CLI::App* c, SamplingOptions& o);

/// Checks the ranges (before any model loads) so a bad value is a usage error naming the flag.
Status validate_sampling(const SamplingOptions& o);

/// The engine's config. `max_tokens` -1 becomes the largest count (generation then stops at
/// end of generation or when the context is full).
GenerationConfig config_of(const SamplingOptions& o);

}  // namespace geniex::cli
