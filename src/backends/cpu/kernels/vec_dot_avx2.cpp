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
    default: return nullptr;
  }
}

}  // namespace geniex::cpu::detail
