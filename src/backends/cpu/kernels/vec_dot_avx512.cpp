// AVX-512 levels. kAvx512Vnni: vec_dot_x86-inl.h compiled with AVX-512 F/BW/VL/VNNI, where the
// integer dots use ymm vpdpbusd (one instruction instead of maddubs + madd). kAvx512 (no VNNI) has
// no dedicated kernels: the dispatcher falls back to AVX2 per type.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/kernels/repack_internal.h"
#include "backends/cpu/kernels/vec_dot_internal.h"
#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

// GCC 12 warns about the deliberately uninitialized _mm512_undefined_ps inside _mm512_cvtph_ps
// once it is inlined (F16RowsKernel).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace geniex::cpu::detail {
namespace avx512vnni {
namespace {
#define GENIEX_X86_TARGET \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define GENIEX_X86_VNNI 1
#include "backends/cpu/kernels/vec_dot_x86-inl.h"  // NOLINT(build/include)
#undef GENIEX_X86_TARGET
#undef GENIEX_X86_VNNI
}  // namespace
}  // namespace avx512vnni

GemmFn avx512_gemm(GgmlType) { return nullptr; }
GemmFn avx512vnni_gemm(GgmlType t) { return avx512vnni::gemm_for_type(t); }
PackedGemmFn avx512vnni_packed_gemm(GgmlType t) { return avx512vnni::packed_gemm_for_type(t); }

}  // namespace geniex::cpu::detail
