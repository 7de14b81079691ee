// GELU on the CPU the way ggml computes it, so that greedy outputs track llama.cpp: inputs in
// (-10, 10) are rounded to f16 and mapped through a 65,536-entry table of f16 GELU values
// (computed in float with the tanh approximation); below -10 the result is 0, above 10 it is x.
// The scalar reference (graph/ref_ops) stays exact; this rounding is the documented difference.
#include <array>
#include <cmath>
#include <cstdint>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/isa.h"
#include "core/fp16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// F16C conversions (round to nearest even, like fp32_to_fp16) around the same table lookup.
__attribute__((target("avx2,f16c"))) void gelu_rows_f16c(const float* x, const float* up, float* y,
                                                         int64_t n) {
  const auto& t = gelu_table();
  const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
  alignas(32) uint16_t h[8];
  alignas(32) uint16_t g[8];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm_store_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    for (int l = 0; l < 8; ++l) g[l] = t[h[l]];
    __m256 r = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(g)));
    r = _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, hi, _CMP_GE_OQ));
    r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LE_OQ));
    if (up != nullptr) r = _mm256_mul_ps(r, _mm256_loadu_ps(up + i));
    _mm256_storeu_ps(y + i, r);
  }
  for (; i < n; ++i) {
    const float gv = gelu_f16_table(x[i]);
    y[i] = up != nullptr ? gv * up[i] : gv;
  }
}
#endif

void gelu_rows(const float* x, const float* up, float* y, int64_t n) {
#if defined(__x86_64__)
  static const bool f16c = ::geniex::cpu::has_f16c(::geniex::cpu::detect_isa());
  if (f16c) {
    gelu_rows_f16c(x, up, y, n);
    return;
  }
#endif
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
