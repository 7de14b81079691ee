// Fast CPU dot-product kernels: activation quantization and weight x activation "gemm" for every
// weight type quant::can_vec_dot supports, with run-time SIMD dispatch (isa.h). Results equal
// quant::vec_dot_ref up to float summation order; activations are bit-identical to
// quant::quantize_row(quant::vec_dot_type(t), ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "backends/cpu/kernels/isa.h"
#include "core/dtype.h"

namespace geniex::cpu {

/// Quantizes n floats (n a multiple of the activation block size) into activation blocks.
using QuantizeActFn = void (*)(const float* x, void* dst, int64_t n);

/// For `nr` weight rows (row i at w + i*w_stride bytes) and `nc` activation rows (row j at
/// a + j*a_stride bytes), each of n elements: out[j*out_stride + i] = dot(w row i, act row j).
/// Allocation-free and thread-safe; callers split nr (or nc) across threads.
using GemmFn = void (*)(int64_t n, const uint8_t* w, size_t w_stride, int64_t nr, const uint8_t* a,
                        size_t a_stride, int64_t nc, float* out, size_t out_stride);

/// The kernels for one weight type: `quantize_act` produces `act_type` rows for `gemm`; `isa` is
/// the level the gemm was taken from.
struct DotKernels {
  GgmlType act_type;
  QuantizeActFn quantize_act;
  GemmFn gemm;
  Isa isa;
};

/// Best kernels for weight type `t` at an ISA <= `isa` (falls back per type to a lower level of
/// the family, finally scalar; levels this CPU cannot run are skipped). nullopt if
/// quant::can_vec_dot(t) is false.
std::optional<DotKernels> dot_kernels(GgmlType t, Isa isa = detect_isa());

}  // namespace geniex::cpu
