// SSE4.1 (+ SSSE3) kernels for x86-64 CPUs without AVX2 (Atom-class edge boxes, older Celerons
// and Pentiums): vec_dot_x86-inl.h compiled once more, its 256-bit intrinsics emulated with two
// 128-bit halves by sse4_m256.h (which only this file includes, and which needs <smmintrin.h>,
// not <immintrin.h>). Same integer dots as AVX2; a multiply and an add where AVX2 fuses them.
#include <smmintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/repack_internal.h"
#include "backends/cpu/kernels/vec_dot_internal.h"
#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::cpu::detail {
namespace sse4 {
namespace {
#include "backends/cpu/kernels/sse4_m256.h"  // NOLINT(build/include)
#define GENIEX_X86_TARGET __attribute__((target("sse4.1,ssse3")))
#define GENIEX_X86_VNNI 0
#include "backends/cpu/kernels/vec_dot_x86-inl.h"  // NOLINT(build/include)
#undef GENIEX_X86_TARGET
#undef GENIEX_X86_VNNI
}  // namespace
}  // namespace sse4

GemmFn sse4_gemm(GgmlType t) { return sse4::gemm_for_type(t); }
PackedGemmFn sse4_packed_gemm(GgmlType t) { return sse4::packed_gemm_for_type(t); }

QuantizeActFn sse4_quantize_act(GgmlType act_type) {
  switch (act_type) {
    case GgmlType::kQ8_0: return sse4::quantize_q8_0;
    case GgmlType::kQ8_K: return sse4::quantize_q8_k;
    default: return nullptr;
  }
}

}  // namespace geniex::cpu::detail
