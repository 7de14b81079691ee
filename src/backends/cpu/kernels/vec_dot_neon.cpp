// aarch64 kernels: vec_dot_neon-inl.h instantiated for baseline NEON (vmull/vpadal integer dots),
// for the dot-product extension (sdot) and for dotprod + i8mm (smmla), the latter two via
// per-function target attributes so the binary still runs on plain Armv8-A. Dispatch checks
// HWCAP_ASIMDDP / HWCAP2_I8MM first (isa.cpp). The SIMD activation quantizers are baseline NEON.
#include <arm_neon.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/repack_internal.h"
#include "backends/cpu/kernels/vec_dot_internal.h"
#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

// GCC: dotprod intrinsics are usable inside target("arch=armv8.2-a+dotprod") functions. Older
// clang only declares them when the whole TU has the feature, so clang builds the dotprod set
// only with a global -march that includes it.
#if defined(__ARM_FEATURE_DOTPROD) || !defined(__clang__)
#define GENIEX_HAVE_NEON_DOTPROD 1
#else
#define GENIEX_HAVE_NEON_DOTPROD 0
#endif
#if (defined(__ARM_FEATURE_DOTPROD) && defined(__ARM_FEATURE_MATMUL_INT8)) || !defined(__clang__)
#define GENIEX_HAVE_NEON_I8MM 1
#else
#define GENIEX_HAVE_NEON_I8MM 0
#endif

namespace geniex::cpu::detail {

namespace neon_base {
namespace {
#define GENIEX_NEON_TARGET
#define GENIEX_NEON_DOTPROD 0
#define GENIEX_NEON_I8MM 0
#include "backends/cpu/kernels/vec_dot_neon-inl.h"  // NOLINT(build/include)
#undef GENIEX_NEON_TARGET
#undef GENIEX_NEON_DOTPROD
#undef GENIEX_NEON_I8MM
}  // namespace
}  // namespace neon_base

#if GENIEX_HAVE_NEON_DOTPROD
namespace neon_dot {
namespace {
#if defined(__ARM_FEATURE_DOTPROD)
#define GENIEX_NEON_TARGET
#else
#define GENIEX_NEON_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
#define GENIEX_NEON_DOTPROD 1
#define GENIEX_NEON_I8MM 0
#include "backends/cpu/kernels/vec_dot_neon-inl.h"  // NOLINT(build/include)
#undef GENIEX_NEON_TARGET
#undef GENIEX_NEON_DOTPROD
#undef GENIEX_NEON_I8MM
}  // namespace
}  // namespace neon_dot
#endif

#if GENIEX_HAVE_NEON_I8MM
namespace neon_i8mm {
namespace {
#if defined(__ARM_FEATURE_DOTPROD) && defined(__ARM_FEATURE_MATMUL_INT8)
#define GENIEX_NEON_TARGET
#else
#define GENIEX_NEON_TARGET __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#endif
#define GENIEX_NEON_DOTPROD 1
#define GENIEX_NEON_I8MM 1
#include "backends/cpu/kernels/vec_dot_neon-inl.h"  // NOLINT(build/include)
#undef GENIEX_NEON_TARGET
#undef GENIEX_NEON_DOTPROD
#undef GENIEX_NEON_I8MM
}  // namespace
}  // namespace neon_i8mm
#endif

QuantizeActFn neon_quantize_act(GgmlType act_type) {
  switch (act_type) {
    case GgmlType::kQ8_0: return neon_base::quantize_q8_0;
    case GgmlType::kQ8_K: return neon_base::quantize_q8_k;
    default: return nullptr;
  }
}

GemmFn neon_gemm(GgmlType t) { return neon_base::gemm_for_type(t); }

GemmFn neon_dotprod_gemm([[maybe_unused]] GgmlType t) {
#if GENIEX_HAVE_NEON_DOTPROD
  return neon_dot::gemm_for_type(t);
#else
  return nullptr;
#endif
}

PackedGemmFn neon_packed_gemm(GgmlType t) { return neon_base::packed_gemm_for_type(t); }

PackedGemmFn neon_dotprod_packed_gemm([[maybe_unused]] GgmlType t) {
#if GENIEX_HAVE_NEON_DOTPROD
  return neon_dot::packed_gemm_for_type(t);
#else
  return nullptr;
#endif
}

PackedGemmFn neon_i8mm_packed_gemm([[maybe_unused]] GgmlType t) {
#if GENIEX_HAVE_NEON_I8MM
  return neon_i8mm::packed_gemm_for_type(t);
#else
  return nullptr;
#endif
}

GemmFn neon_i8mm_gemm([[maybe_unused]] GgmlType t) {
#if GENIEX_HAVE_NEON_I8MM
  return neon_i8mm::gemm_for_type(t);
#else
  return nullptr;
#endif
}

}  // namespace geniex::cpu::detail
