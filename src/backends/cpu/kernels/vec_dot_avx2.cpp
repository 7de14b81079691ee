// AVX2 (+FMA, F16C) kernels: vec_dot_x86-inl.h compiled with per-function target attributes in
// an anonymous namespace, plus the SIMD activation quantizers.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/repack_internal.h"
#include "backends/cpu/kernels/vec_dot_internal.h"
#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::cpu::detail {
namespace avx2 {
namespace {
#define GENIEX_X86_TARGET __attribute__((target("avx2,fma,f16c")))
#define GENIEX_X86_VNNI 0
#include "backends/cpu/kernels/vec_dot_x86-inl.h"  // NOLINT(build/include)

// F16 activations: vcvtps2ph with round-to-nearest-even (the immediate, not MXCSR) is
// fp32_to_fp16 for every float that is not NaN (subnormal results and overflow to Inf included);
// groups of 8 with a NaN, and the tail, go to the reference.
GENIEX_X86_TARGET void quantize_f16(const float* x, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      quant::detail::quantize_f16(x + i, out + 2 * i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  if (i < n) quant::detail::quantize_f16(x + i, out + 2 * i, static_cast<size_t>(n - i));
}

#undef GENIEX_X86_TARGET
#undef GENIEX_X86_VNNI
}  // namespace
}  // namespace avx2

GemmFn avx2_gemm(GgmlType t) { return avx2::gemm_for_type(t); }
PackedGemmFn avx2_packed_gemm(GgmlType t) { return avx2::packed_gemm_for_type(t); }

QuantizeActFn avx2_quantize_act(GgmlType act_type) {
  switch (act_type) {
    case GgmlType::kQ8_0: return avx2::quantize_q8_0;
    case GgmlType::kQ8_K: return avx2::quantize_q8_k;
    case GgmlType::kF16: return avx2::quantize_f16;
    default: return nullptr;
  }
}

}  // namespace geniex::cpu::detail
