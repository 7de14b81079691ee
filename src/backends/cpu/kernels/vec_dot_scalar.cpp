// Scalar kernels: every type quant::can_vec_dot supports. The gemm runs the quant module's
// per-row reference dots (no Result / size-check overhead) over cache-sized chunks of weight
// rows; activation quantization is the reference quantizer itself, so every ISA's activations
// are bit-identical to quant::quantize_row by construction.
#include <algorithm>

#include "backends/cpu/kernels/vec_dot_internal.h"
#include "quant/quant_internal.h"

namespace geniex::cpu::detail {
namespace {

using quant::detail::DotFn;
using quant::detail::QuantFn;

template <DotFn kDot, int kBlockElems, size_t kBytes>
void gemm_ref(int64_t n, const uint8_t* w, size_t w_stride, int64_t nr, const uint8_t* a,
              size_t a_stride, int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(n / kBlockElems);
  if (nb == 0) {
    for (int64_t j = 0; j < nc; ++j) {
      std::fill_n(out + static_cast<size_t>(j) * out_stride, nr, 0.0f);
    }
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>((16u << 10) / (nb * kBytes)));
  for (int64_t i0 = 0; i0 < nr; i0 += chunk) {
    const int64_t i1 = std::min(nr, i0 + chunk);
    for (int64_t j = 0; j < nc; ++j) {
      const uint8_t* ar = a + static_cast<size_t>(j) * a_stride;
      float* o = out + static_cast<size_t>(j) * out_stride;
      for (int64_t i = i0; i < i1; ++i) o[i] = kDot(w + static_cast<size_t>(i) * w_stride, ar, nb);
    }
  }
}

template <QuantFn kQuant, int kBlockElems>
void quantize_ref(const float* x, void* dst, int64_t n) {
  kQuant(x, static_cast<uint8_t*>(dst), static_cast<size_t>(n / kBlockElems));
}

}  // namespace

GemmFn scalar_gemm(GgmlType t) {
  namespace qd = quant::detail;
  switch (t) {
    case GgmlType::kF32: return gemm_ref<qd::dot_f32, 1, 4>;
    case GgmlType::kF16: return gemm_ref<qd::dot_f16, 1, 2>;
    case GgmlType::kBF16: return gemm_ref<qd::dot_bf16, 1, 2>;
    case GgmlType::kQ4_0: return gemm_ref<qd::dot_q4_0, 32, 18>;
    case GgmlType::kQ4_1: return gemm_ref<qd::dot_q4_1, 32, 20>;
    case GgmlType::kQ5_0: return gemm_ref<qd::dot_q5_0, 32, 22>;
    case GgmlType::kQ5_1: return gemm_ref<qd::dot_q5_1, 32, 24>;
    case GgmlType::kQ8_0: return gemm_ref<qd::dot_q8_0, 32, 34>;
    case GgmlType::kIQ4_NL: return gemm_ref<qd::dot_iq4_nl, 32, 18>;
    case GgmlType::kMXFP4: return gemm_ref<qd::dot_mxfp4, 32, 17>;
    case GgmlType::kQ2_K: return gemm_ref<qd::dot_q2_k, 256, 84>;
    case GgmlType::kQ3_K: return gemm_ref<qd::dot_q3_k, 256, 110>;
    case GgmlType::kQ4_K: return gemm_ref<qd::dot_q4_k, 256, 144>;
    case GgmlType::kQ5_K: return gemm_ref<qd::dot_q5_k, 256, 176>;
    case GgmlType::kQ6_K: return gemm_ref<qd::dot_q6_k, 256, 210>;
    case GgmlType::kIQ4_XS: return gemm_ref<qd::dot_iq4_xs, 256, 136>;
    default: return nullptr;
  }
}

QuantizeActFn scalar_quantize_act(GgmlType act_type) {
  namespace qd = quant::detail;
  switch (act_type) {
    case GgmlType::kF32: return quantize_ref<qd::quantize_f32, 1>;
    case GgmlType::kF16: return quantize_ref<qd::quantize_f16, 1>;
    case GgmlType::kBF16: return quantize_ref<qd::quantize_bf16, 1>;
    case GgmlType::kQ8_0: return quantize_ref<qd::quantize_q8_0, 32>;
    case GgmlType::kQ8_1: return quantize_ref<qd::quantize_q8_1, 32>;
    case GgmlType::kQ8_K: return quantize_ref<qd::quantize_q8_k, 256>;
    default: return nullptr;
  }
}

}  // namespace geniex::cpu::detail
