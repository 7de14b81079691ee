#include "engine/sampling/sampling_params.h"

#include <cmath>
#include <string>

namespace geniex::sampling {
namespace {

std::string show(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return std::to_string(v);
}

Status bad(const char* field, const std::string& value, const char* rule) {
  return invalid_argument(std::string("sampling params: ") + field + " = " + value + " " + rule);
}

}  // namespace

Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return bad("temperature", show(temperature), "must be finite and >= 0 (0 = greedy)");
  }
  if (top_k < 0) return bad("top_k", std::to_string(top_k), "must be >= 0 (0 = off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return bad("top_p", show(top_p), "must be in (0, 1] (1 = off)");
  }
  if (!(min_p >= 0.0f && min_p < 1.0f)) {
    return bad("min_p", show(min_p), "must be in [0, 1) (0 = off)");
  }
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0.0f) {
    return bad("repetition_penalty", show(repetition_penalty), "must be finite and > 0 (1 = off)");
  }
  if (!std::isfinite(presence_penalty)) {
    return bad("presence_penalty", show(presence_penalty), "must be finite (0 = off)");
  }
  if (!std::isfinite(frequency_penalty)) {
    return bad("frequency_penalty", show(frequency_penalty), "must be finite (0 = off)");
  }
  if (penalty_last_n < -1) {
    return bad("penalty_last_n", std::to_string(penalty_last_n),
               "must be >= -1 (-1 = whole history, 0 = off)");
  }
  return Status::ok_status();
}

}  // namespace geniex::sampling
