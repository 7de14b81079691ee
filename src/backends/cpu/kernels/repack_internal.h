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

// Q4_Kx8: per 256-element super-block, 8 f16 d (@0), 8 f16 dmin (@16), the 6-bit sub-block
// scales as bytes [sub-block s][row r] (@32), the mins as bytes [pair p][row r][2] (@96: mins
// of sub-blocks 2p, 2p+1 side by side, for one madd with a pair of activation sums), then 32
// chunks of 32 bytes (@160): chunk 8j + t holds, for row r at bytes 4r..4r+3, that row's
// qs[32j + 4t .. 32j + 4t + 3] (low nibbles: sub-block 2j, high nibbles: sub-block 2j + 1).
inline constexpr size_t kQ4_Kx8Block = 160 + 32 * 32;
inline constexpr size_t kQ4_Kx8Scales = 32, kQ4_Kx8Mins = 96, kQ4_Kx8Qs = 160;

// Prepared Q8_K activations for Q4_Kx8: the quants of every super-block back to back, then per
// super-block the float scale and the int16 sums of its 8 sub-blocks of 32.
inline constexpr size_t kQ8KxQs = 256, kQ8KxDs = 20;
inline size_t q8k_for_q4_kx8_bytes(int64_t k) {
  return static_cast<size_t>(k / 256) * (kQ8KxQs + kQ8KxDs);
}

// Q6_Kx8: per super-block, 8 f16 d (@0), the int8 scales as [sub-block s][row r] (@16), then
// (@144) 4 pieces of 12 chunks in the order the kernel reads them: piece 2n + h holds, for
// v = 4h..4h+3, the qh chunk of v (row r's qh[32n + 4v .. +3] at bytes 4r..4r+3), then the ql
// chunks of v (ql[64n + 4v ..]) and then of v + 8 (ql[64n + 32 + 4v ..]). Same size as Q6_K.
inline constexpr size_t kQ6_Kx8Block = 16 + 128 + 4 * 12 * 32;
inline constexpr size_t kQ6_Kx8Scales = 16, kQ6_Kx8Q = 144;
// Offset of the qh chunk (part 0) or ql chunk of v (part 1) / v + 8 (part 2) in half n.
inline constexpr size_t q6_kx8_chunk(int n, int v, int part) {
  return kQ6_Kx8Q + static_cast<size_t>(32 * (12 * (2 * n + v / 4) + 4 * part + v % 4));
}

// Prepared Q8_K activations for Q6_Kx8: quants of every super-block, then per super-block the
// float scale and, per sub-block of 16, the int32 offset correction -32 * Σ q (weights are fed
// unsigned, q + 32).
inline constexpr size_t kQ8K6Ds = 4 + 16 * 4;
inline size_t q8k_for_q6_kx8_bytes(int64_t k) {
  return static_cast<size_t>(k / 256) * (kQ8KxQs + kQ8K6Ds);
}

// Q8_0x8: per 32-element block, 8 f16 scales (row order, @0) then 8 chunks of 32 bytes (@16):
// chunk m holds, for row r at bytes 4r..4r+3, that row's qs[4m..4m+3]. Chunks 0-3 are elements
// 0..15, chunks 4-7 elements 16..31 (the two halves whose dots the x86 row kernels keep apart).
inline constexpr size_t kQ8_0x8Block = 16 + 8 * 32;
inline constexpr size_t kQ8_0x8Qs = 16;

// Q5_0x8: per block, 8 f16 scales (@0), the high bits (@16: row r's 4 bytes at 4r..4r+3, byte e
// has in bit m the high bit of element 4m + e and in bit 4 + m that of element 16 + 4m + e, so
// one 16-bit shift and a mask move the bits of chunk m to bit 4 of each byte), then 4 chunks of
// 32 bytes of nibbles laid out as Q4_0x8's (@48). Weights are fed unsigned, q + 16 (0..31).
inline constexpr size_t kQ5_0x8Block = 16 + 32 + 4 * 32;
inline constexpr size_t kQ5_0x8Qh = 16, kQ5_0x8Qs = 48;

// Prepared Q8_0 activations for Q8_0x8 / Q5_0x8: the nb blocks' 32 int8 quants back to back,
// then per block the float scale and the int32 offset corrections of its two halves,
// -off * Σ q[0..15] and -off * Σ q[16..31] (off = 128 for Q8_0: only the VNNI kernel feeds
// q + 128 and uses them; 16 for Q5_0).
inline constexpr size_t kQ8x8Ds = 12;
inline size_t q8_for_x8_bytes(int64_t k) {
  return static_cast<size_t>(k / 32) * (kQ8x4Qs + kQ8x8Ds);
}

// Repacking, activation preparation and scalar kernels of Q8_0x8 / Q5_0x8 (repack_legacy.cpp).
void repack_q8_0(int64_t k, const uint8_t* src, size_t src_stride, int64_t n, int64_t g0,
                 int64_t g1, uint8_t* dst);
void repack_q5_0(int64_t k, const uint8_t* src, size_t src_stride, int64_t n, int64_t g0,
                 int64_t g1, uint8_t* dst);
void prepare_q8_0_for_q8_0x8(const uint8_t* q, int64_t k, uint8_t* dst);
void prepare_q8_0_for_q5_0x8(const uint8_t* q, int64_t k, uint8_t* dst);
void q8_0x8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                        int64_t nc, float* out, size_t out_stride);
void q5_0x8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                        int64_t nc, float* out, size_t out_stride);

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Each returns nullptr when that ISA has no packed kernel for the type.
PackedGemmFn scalar_packed_gemm(GgmlType t);
#if defined(GENIEX_CPU_X86)
PackedGemmFn sse4_packed_gemm(GgmlType t);
PackedGemmFn avx2_packed_gemm(GgmlType t);
PackedGemmFn avx512vnni_packed_gemm(GgmlType t);
#endif
#if defined(GENIEX_CPU_ARM64)
PackedGemmFn neon_packed_gemm(GgmlType t);
PackedGemmFn neon_dotprod_packed_gemm(GgmlType t);
PackedGemmFn neon_i8mm_packed_gemm(GgmlType t);  // the dotprod kernel, built for i8mm
#endif

}  // namespace geniex::cpu::detail
