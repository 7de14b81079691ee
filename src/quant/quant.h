// Public API of the quant module: row dequantization, reference quantization and scalar
// reference dot products for the ggml block formats (shared/spec/GGUF.md §2-5).
//
// Everything here is the *reference*: exact, portable, single-threaded. Dequantization and the
// quantizers that gguf-py also implements are bit-identical to gguf.quants; the dot products are
// the oracle that SIMD kernels are tested against. No function aborts on bad input: sizes are
// checked and reported through Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/status.h"

namespace geniex::quant {

/// True when dequantize_row supports `t`.
bool can_dequantize(GgmlType t);

/// True when quantize_row supports `t`.
bool can_quantize(GgmlType t);

/// True when vec_dot_ref supports `t` as the weight type.
bool can_vec_dot(GgmlType t);

/// The activation type a weight row of type `t` is dotted with (spec §5.2): Q8_0 for
/// Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4, Q8_1 for Q4_1/Q5_1, Q8_K for K-quants and IQ4_XS, and the
/// type itself for F32/F16/BF16. Returns `t` for types without a dot product.
GgmlType vec_dot_type(GgmlType t);

/// Dequantizes `dst.size()` elements stored as type `t` in `src` to f32.
/// `dst.size()` must be a multiple of the block size and `src.size()` exactly the row's bytes.
/// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
/// Q8_K, IQ4_NL, IQ4_XS, MXFP4. Others return kUnimplemented naming the type.
Status dequantize_row(GgmlType t, std::span<const uint8_t> src, std::span<float> dst);

/// Quantizes `src` to type `t` into `dst` (exactly the row's bytes). Round-to-nearest references:
/// F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (byte-identical to gguf.quants.quantize), Q8_1,
/// Q8_K (llama.cpp's reference scheme), Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS
/// (llama.cpp's quantizers, byte-identical to llama-quantize without an importance matrix). Inputs
/// are expected finite; non-finite inputs give unspecified (but memory-safe) blocks.
Status quantize_row(GgmlType t, std::span<const float> src, std::span<uint8_t> dst);

/// True when quantize_rows takes an importance matrix for `t` (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K,
/// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS); other types ignore one.
bool uses_importance(GgmlType t);

/// llama.cpp's ggml_quantize_chunk over whole rows, byte-identical to llama-quantize: `src` holds
/// rows of `n_per_row` elements, `dst` exactly their bytes. Without `imatrix` every type uses its
/// round-to-nearest reference (quantize_row; Q2_K..Q6_K, IQ4_NL, IQ4_XS are llama.cpp's own
/// searches). With `imatrix` (n_per_row per-column importances) the types of uses_importance()
/// run llama.cpp's importance-weighted search.
Status quantize_rows(GgmlType t, std::span<const float> src, std::span<uint8_t> dst,
                     size_t n_per_row, std::span<const float> imatrix = {});

/// Scalar reference dot of one weight row of type `weight_type` with one activation row already
/// in `vec_dot_type(weight_type)`, both of `n` elements. Integer accumulation per block, then
/// scaling (spec §5.2).
Result<float> vec_dot_ref(GgmlType weight_type, std::span<const uint8_t> w_row,
                          std::span<const uint8_t> act_row, size_t n);

/// Quantizes the f32 activations `x` to `vec_dot_type(weight_type)` and dots them with `w_row`
/// (`x.size()` elements). This is what a matmul computes for one output element.
Result<float> dot_f32_ref(GgmlType weight_type, std::span<const uint8_t> w_row,
                          std::span<const float> x);

}  // namespace geniex::quant
