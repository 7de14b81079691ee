// AVX-512 levels: no dedicated kernels yet; the dispatcher falls back to AVX2 per type.
#include "backends/cpu/kernels/vec_dot_internal.h"

namespace geniex::cpu::detail {

GemmFn avx512_gemm(GgmlType) { return nullptr; }
GemmFn avx512vnni_gemm(GgmlType) { return nullptr; }

}  // namespace geniex::cpu::detail
