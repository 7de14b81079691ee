// GELU on the CPU the way ggml computes it, so that greedy outputs track llama.cpp: inputs in
// (-10, 10) are rounded to f16 and mapped through a 65,536-entry table of f16 GELU values
// (computed in float with the tanh approximation); below -10 the result is 0, above 10 it is x.
// The scalar reference (graph/ref_ops) stays exact; this rounding is the documented difference.
#include <array>
#include <cmath>
#include <cstdint>

#include "backends/cpu/cpu_ops.h"
#include "core/fp16.h"

namespace geniex::backends::cpu {
namespace {

float gelu_tanh_f32(float x) {
  constexpr float kA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kA * x * x)));
}

const std::array<uint16_t, 65536>& gelu_table() {
  static const auto* table = [] {
    auto* t = new std::array<uint16_t, 65536>();
    for (uint32_t i = 0; i < 65536; ++i) {
      (*t)[i] = fp32_to_fp16(gelu_tanh_f32(fp16_to_fp32(static_cast<uint16_t>(i))));
    }
    return t;
  }();
  return *table;
}

}  // namespace

float gelu_f16_table(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return fp16_to_fp32(gelu_table()[fp32_to_fp16(x)]);
}

void gelu_rows(const float* x, const float* up, float* y, int64_t n) {
  const auto& t = gelu_table();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    float g;
    if (v <= -10.0f) {
      g = 0.0f;
    } else if (v >= 10.0f) {
      g = v;
    } else {
      g = fp16_to_fp32(t[fp32_to_fp16(v)]);
    }
    y[i] = up != nullptr ? g * up[i] : g;
  }
}

}  // namespace geniex::backends::cpu
