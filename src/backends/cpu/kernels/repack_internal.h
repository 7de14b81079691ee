// Packed layouts shared by repack.cpp and the per-ISA packed kernels, and the per-ISA tables
// behind packed_kernels(). Internal to src/backends/cpu/kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu/kernels/repack.h"

namespace geniex::cpu::detail {

// Q4_0x8: per block, 8 f16 scales (16 bytes) then 4 x 32 bytes of interleaved nibbles.
inline constexpr size_t kQ4_0x8Block = 16 + 4 * 32;

// Prepared Q8_0 activations for Q4_0x8: the nb blocks' 32 int8 quants back to back, then per
// block the float scale and the int32 offset correction -8 * Σ q (weights are fed as unsigned
// nibbles 0..15, i.e. q + 8).
inline constexpr size_t kQ8x4Qs = 32, kQ8x4Ds = 8;
inline size_t q8_for_q4_0x8_bytes(int64_t k) {
  return static_cast<size_t>(k / 32) * (kQ8x4Qs + kQ8x4Ds);
}

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Each returns nullptr when that ISA has no packed kernel for the type.
PackedGemmFn scalar_packed_gemm(GgmlType t);
#if defined(GENIEX_CPU_X86)
PackedGemmFn avx2_packed_gemm(GgmlType t);
PackedGemmFn avx512vnni_packed_gemm(GgmlType t);
#endif
#if defined(GENIEX_CPU_ARM64)
PackedGemmFn neon_packed_gemm(GgmlType t);
PackedGemmFn neon_dotprod_packed_gemm(GgmlType t);
PackedGemmFn neon_i8mm_packed_gemm(GgmlType t);  // the dotprod kernel, built for i8mm
#endif

}  // namespace geniex::cpu::detail
