// f32 -> f16 rows (the F16 KV cache write): F16C on x86, NEON on Arm, fp32_to_fp16 elsewhere and
// for tails. Every path rounds to nearest even and quiets NaNs keeping the payload's top bits,
// so the bits equal fp32_to_fp16's (convert_test.cpp checks every exponent and the edges).
#include <cstdint>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/isa.h"
#include "core/fp16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace geniex::backends::cpu {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx2,f16c"))) int64_t f16_rows_f16c(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}
#endif

}  // namespace

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  static const bool f16c = ::geniex::cpu::has_f16c(::geniex::cpu::detect_isa());
  if (f16c) i = f16_rows_f16c(x, y, n);
#elif defined(__aarch64__)
  for (; i + 4 <= n; i += 4) {
    vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  }
#endif
  for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

}  // namespace geniex::backends::cpu
