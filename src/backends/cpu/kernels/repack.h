// Load-time weight repacking for the matmul kernels: rows interleaved in groups of kPackRows so a
// GEMM/GEMV micro-kernel reads one linear stream per group and its SIMD lanes hold one row each
// (no horizontal sums). The packed kernels compute exactly what the row kernels of vec_dot.h do:
// the same activation quantization (bit-identical to the reference), exact integer block dots,
// only the float accumulation order differs from quant::vec_dot_ref.
//
// Packed Q4_0 ("Q4_0x8"): per group of 8 rows and per 32-element block, 8 f16 scales (row order)
// then 4 chunks of 32 bytes; chunk m holds, for row r at bytes 4r..4r+3, that row's qs[4m..4m+3]
// (low nibbles: elements 4m..4m+3, high nibbles: elements 16+4m..16+4m+3). A 32-bit lane of a
// chunk is one row's four nibble pairs, so one vpdpbusd / sdot gives 8 (4) rows' partial dots.
// The last group is padded with zero rows. Q8_0x8 and Q5_0x8 (same scheme, layouts in
// repack_internal.h) keep the row kernels' exact float order: their results are bit-identical to
// those of dot_kernels() on the same ISA for the same call (README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "core/dtype.h"

namespace geniex::cpu {

/// Rows per interleaved group.
inline constexpr int64_t kPackRows = 8;

/// True for weight types with a packed layout (Q4_0, Q8_0, Q5_0, Q4_K, Q6_K).
bool can_repack(GgmlType t);

/// Bytes of one packed group of kPackRows rows of k elements (0 if !can_repack(t) or k is not
/// whole blocks).
size_t packed_group_bytes(GgmlType t, int64_t k);

/// Bytes of n rows of k elements, packed (whole groups).
size_t packed_bytes(GgmlType t, int64_t k, int64_t n);

/// Packs groups [g0, g1) of the n rows at src (row i at src + i * src_stride) into dst (the
/// start of the whole packed matrix). Rows >= n of the last group are zero.
void repack_groups(GgmlType t, int64_t k, const uint8_t* src, size_t src_stride, int64_t n,
                   int64_t g0, int64_t g1, uint8_t* dst);

/// Writes row `row` of a packed matrix (`packed`: the whole matrix, rows of k elements) back in
/// t's own block layout (ggml_row_bytes(t, k) bytes at dst), byte for byte what repack_groups
/// read. Q4_0 and Q8_0 (the types whose packed copy can replace a token-embedding table); false,
/// with dst untouched, for the others.
bool unpack_row(GgmlType t, int64_t k, const uint8_t* packed, int64_t row, uint8_t* dst);

/// Turns one row of k activations quantized by DotKernels::quantize_act (act_type) into the
/// packed kernel's activation row (packed_act_bytes(k) bytes).
using PrepareActFn = void (*)(const uint8_t* q, int64_t k, uint8_t* dst);

/// For packed weights w (starting at a group boundary) of nr rows and nc prepared activation
/// rows (row j at a + j * a_stride): out[j * out_stride + i] = dot(weight row i, act row j),
/// i < nr. Allocation-free and thread-safe; callers split whole groups across threads.
using PackedGemmFn = void (*)(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a,
                              size_t a_stride, int64_t nc, float* out, size_t out_stride);

/// The packed kernels for one weight type.
struct PackedKernels {
  GgmlType act_type;           ///< what quantize_act produces
  QuantizeActFn quantize_act;  ///< the dispatched quantizer of dot_kernels()
  PrepareActFn prepare_act;    ///< quantized row -> packed activation row
  size_t (*act_bytes)(int64_t k);
  PackedGemmFn gemm;
  Isa isa;  ///< level the gemm was taken from
  /// gemm returns exactly the row kernels' results (dot_kernels(t, isa), same call), so
  /// repacking changes no output: Q8_0 and Q5_0 on every ISA, Q4_K on the SIMD levels.
  bool same_as_row_kernels = false;
};

/// Best packed kernels for `t` at an ISA <= `isa` (scalar at worst); nullopt if !can_repack(t).
std::optional<PackedKernels> packed_kernels(GgmlType t, Isa isa = detect_isa());

}  // namespace geniex::cpu
