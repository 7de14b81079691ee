// Per-type kernels behind the quant.h dispatch. Internal to src/quant: callers have already
// checked sizes, so each function processes exactly `nb` whole blocks (elements for F32/F16/BF16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace geniex::quant::detail {

/// Reads block `i` of type B from a byte stream (unaligned-safe).
template <typename B>
inline B load_block(const uint8_t* p, size_t i) {
  B b;
  std::memcpy(&b, p + i * sizeof(B), sizeof(B));
  return b;
}

/// Writes block `i` of type B to a byte stream (unaligned-safe).
template <typename B>
inline void store_block(uint8_t* p, size_t i, const B& b) {
  std::memcpy(p + i * sizeof(B), &b, sizeof(B));
}

using DequantFn = void (*)(const uint8_t* src, float* dst, size_t nb);
using QuantFn = void (*)(const float* src, uint8_t* dst, size_t nb);
using DotFn = float (*)(const uint8_t* w, const uint8_t* a, size_t nb);

// dequant.cpp
void dequant_f32(const uint8_t* src, float* dst, size_t nb);
void dequant_f16(const uint8_t* src, float* dst, size_t nb);
void dequant_bf16(const uint8_t* src, float* dst, size_t nb);
void dequant_q4_0(const uint8_t* src, float* dst, size_t nb);
void dequant_q4_1(const uint8_t* src, float* dst, size_t nb);
void dequant_q5_0(const uint8_t* src, float* dst, size_t nb);
void dequant_q5_1(const uint8_t* src, float* dst, size_t nb);
void dequant_q8_0(const uint8_t* src, float* dst, size_t nb);
void dequant_q8_1(const uint8_t* src, float* dst, size_t nb);
void dequant_iq4_nl(const uint8_t* src, float* dst, size_t nb);
void dequant_mxfp4(const uint8_t* src, float* dst, size_t nb);

// dequant_k.cpp
void dequant_q2_k(const uint8_t* src, float* dst, size_t nb);
void dequant_q3_k(const uint8_t* src, float* dst, size_t nb);
void dequant_q4_k(const uint8_t* src, float* dst, size_t nb);
void dequant_q5_k(const uint8_t* src, float* dst, size_t nb);
void dequant_q6_k(const uint8_t* src, float* dst, size_t nb);
void dequant_q8_k(const uint8_t* src, float* dst, size_t nb);
void dequant_iq4_xs(const uint8_t* src, float* dst, size_t nb);

// quantize_legacy.cpp
void quantize_f32(const float* src, uint8_t* dst, size_t nb);
void quantize_f16(const float* src, uint8_t* dst, size_t nb);
void quantize_bf16(const float* src, uint8_t* dst, size_t nb);
void quantize_q4_0(const float* src, uint8_t* dst, size_t nb);
void quantize_q4_1(const float* src, uint8_t* dst, size_t nb);
void quantize_q5_0(const float* src, uint8_t* dst, size_t nb);
void quantize_q5_1(const float* src, uint8_t* dst, size_t nb);
void quantize_q8_0(const float* src, uint8_t* dst, size_t nb);
void quantize_q8_1(const float* src, uint8_t* dst, size_t nb);

// quantize_k.cpp
void quantize_q8_k(const float* src, uint8_t* dst, size_t nb);

// quantize_ggml_k.cpp / quantize_ggml_iq4.cpp: llama.cpp's quantizers (byte-identical).
void quantize_q2_k(const float* src, uint8_t* dst, size_t nb);
void quantize_q3_k(const float* src, uint8_t* dst, size_t nb);
void quantize_q4_k(const float* src, uint8_t* dst, size_t nb);
void quantize_q5_k(const float* src, uint8_t* dst, size_t nb);
void quantize_q6_k(const float* src, uint8_t* dst, size_t nb);
void quantize_iq4_nl(const float* src, uint8_t* dst, size_t nb);
void quantize_iq4_xs(const float* src, uint8_t* dst, size_t nb);

/// One row of `n` elements with importance weights `qw` (n values, one per column).
using WeightedQuantFn = void (*)(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q4_0_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q4_1_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q5_0_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q5_1_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q2_k_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q3_k_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q4_k_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q5_k_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_q6_k_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_iq4_nl_w(const float* src, uint8_t* dst, size_t n, const float* qw);
void quantize_iq4_xs_w(const float* src, uint8_t* dst, size_t n, const float* qw);

// dot_ref.cpp (activation types per quant.h vec_dot_type)
float dot_f32(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_f16(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_bf16(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q4_0(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q4_1(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q5_0(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q5_1(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q8_0(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_iq4_nl(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_mxfp4(const uint8_t* w, const uint8_t* a, size_t nb);

// dot_ref_k.cpp
float dot_q2_k(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q3_k(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q4_k(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q5_k(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_q6_k(const uint8_t* w, const uint8_t* a, size_t nb);
float dot_iq4_xs(const uint8_t* w, const uint8_t* a, size_t nb);

}  // namespace geniex::quant::detail
