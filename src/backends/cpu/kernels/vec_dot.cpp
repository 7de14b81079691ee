// dot_kernels(): picks, per weight type, the highest ISA level at or below the requested one that
// has a kernel and that this CPU runs, falling back to the scalar kernels.
#include "backends/cpu/kernels/vec_dot.h"

#include "backends/cpu/kernels/vec_dot_internal.h"
#include "quant/quant.h"

namespace geniex::cpu {
namespace {

GemmFn gemm_for(Isa isa, GgmlType t) {
  switch (isa) {
    case Isa::kScalar: return detail::scalar_gemm(t);
#if defined(GENIEX_CPU_X86)
    case Isa::kSse4: return detail::sse4_gemm(t);
    case Isa::kAvx2: return detail::avx2_gemm(t);
    case Isa::kAvx512: return detail::avx512_gemm(t);
    case Isa::kAvx512Vnni: return detail::avx512vnni_gemm(t);
#endif
#if defined(GENIEX_CPU_ARM64)
    case Isa::kNeon: return detail::neon_gemm(t);
    case Isa::kNeonDotprod: return detail::neon_dotprod_gemm(t);
    case Isa::kNeonI8mm: return detail::neon_i8mm_gemm(t);
#endif
    default: return nullptr;
  }
}

// The SIMD activation quantizer of the family of `isa` (bit-identical to the reference), else the
// reference itself.
QuantizeActFn quantize_for(Isa isa, GgmlType act) {
  for (Isa i = isa; i != Isa::kScalar; i = lower_isa(i)) {
    if (!isa_available(i)) continue;
#if defined(GENIEX_CPU_X86)
    if (i == Isa::kAvx2) {
      if (QuantizeActFn q = detail::avx2_quantize_act(act)) return q;
    }
    if (i == Isa::kSse4) {
      if (QuantizeActFn q = detail::sse4_quantize_act(act)) return q;
    }
#endif
#if defined(GENIEX_CPU_ARM64)
    if (i == Isa::kNeon) {
      if (QuantizeActFn q = detail::neon_quantize_act(act)) return q;
    }
#endif
  }
  return detail::scalar_quantize_act(act);
}

}  // namespace

std::optional<DotKernels> dot_kernels(GgmlType t, Isa isa) {
  if (!quant::can_vec_dot(t)) return std::nullopt;
  const GgmlType act = quant::vec_dot_type(t);
  const QuantizeActFn quantize = quantize_for(isa, act);
  if (quantize == nullptr) return std::nullopt;
  for (Isa i = isa;; i = lower_isa(i)) {
    if (isa_available(i)) {
      if (GemmFn g = gemm_for(i, t)) return DotKernels{act, quantize, g, i};
    }
    if (i == Isa::kScalar) break;
  }
  return std::nullopt;
}

}  // namespace geniex::cpu
