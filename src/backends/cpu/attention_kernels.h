// SIMD building blocks of CPU attention (op_attention*.cpp), one set per instruction set, picked at
// run time. K and V rows are read in place from an F32 or F16 cache (F16 converted in registers),
// or dequantized from Q8_0 / Q4_0 (the Q8_0 x Q8_0 / Q4_0 x Q8_0 dots are kernels/vec_dot.h's);
// nothing here rounds beyond what the f32 arithmetic does, so every set computes the same values
// up to float summation order (and FMA contraction).
#pragma once

#include <cstdint>
#include <span>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/isa.h"

namespace geniex::backends::cpu::attn {

/// Rows of queries / probabilities are processed in blocks of at most this many.
inline constexpr int kMaxRows = 4;
/// Keys per panel of a K packed for dense_scores (op_attention_dense.cpp).
inline constexpr int64_t kDenseKeys = 64;

struct Kernels {
  /// s[r * s_stride + m] = sum_i q[r * n + i] * row[i] with row = k + int64_t(keys[m]) * k_stride,
  /// for r < nr (1 <= nr <= kMaxRows) and m in [m0, m1). Each value depends only on its query
  /// row and key row (the same bits whatever nr, m0, m1 and the other keys).
  void (*dots_f32)(const float* q, int nr, int64_t n, const float* k, int64_t k_stride,
                   const float* keys, int64_t m0, int64_t m1, float* s, int64_t s_stride);
  void (*dots_f16)(const float* q, int nr, int64_t n, const uint16_t* k, int64_t k_stride,
                   const float* keys, int64_t m0, int64_t m1, float* s, int64_t s_stride);
  /// For m in [m0, m1), in that order, with row = v + int64_t(keys[m]) * v_stride:
  ///   acc[r * acc_stride + i] += p[r * p_stride + m] * row[i]   (r < nr, i < n).
  void (*pv_f32)(const float* p, int64_t p_stride, int nr, const float* keys, int64_t m0,
                 int64_t m1, const float* v, int64_t v_stride, int64_t n, float* acc,
                 int64_t acc_stride);
  void (*pv_f16)(const float* p, int64_t p_stride, int nr, const float* keys, int64_t m0,
                 int64_t m1, const uint16_t* v, int64_t v_stride, int64_t n, float* acc,
                 int64_t acc_stride);
  /// s[i] = e^(s[i] - mx) for i < n (kernels/exp_simd.h's exp: <= 2 ULP, -inf -> 0, results
  /// below FLT_MIN flushed to 0); returns the sum of the new s[i], accumulated in double.
  double (*softmax_exp)(float* s, int64_t n, float mx);
  /// x[i] *= mul, then, if round_f16, x[i] = f16 round-to-nearest-even of x[i] (as fp32_to_fp16).
  void (*scale)(float* x, int64_t n, float mul, bool round_f16);
  /// Dense scores over K packed in panels of kDenseKeys keys (panel b, element i, key j at
  /// kp[(b * n + i) * kDenseKeys + j]): s[r * s_stride + m] = (sum over i < n, in order, of
  /// q[r * n + i] * key m's element i) * mul, for r < nr (1 <= nr <= kMaxRows) and every m of
  /// the n_panels panels. Each sum is one multiply-add chain over i, so its bits depend only on
  /// its query row and key.
  void (*dense_scores)(const float* q, int nr, int64_t n, const float* kp, int64_t n_panels,
                       float mul, float* s, int64_t s_stride);
  /// The largest of x[0 .. n) (n >= 1).
  float (*row_max)(const float* x, int64_t n);
  /// n elements (whole 32-element blocks) of Q8_0 / Q4_0 to f32, bit-identical to
  /// quant::dequantize_row (each value is float(q) * d, one rounding).
  void (*dequant_q8_0)(const uint8_t* src, float* dst, int64_t n);
  void (*dequant_q4_0)(const uint8_t* src, float* dst, int64_t n);
  /// Token-major Q.K for a decode step: s[(h * n_rows + r) * s_stride + m] = the dot of query
  /// row q + (h * n_rows + r) * n with kv head h's n elements of K row k + int64_t(keys[m]) *
  /// k_stride (at h * n), for every kv head h < n_kv_head, r < n_rows, m in [m0, m1). Each key's
  /// row of all heads is read once, in order; each value has dots_*'s bits.
  void (*head_dots_f32)(const float* q, int64_t n_rows, int64_t n_kv_head, int64_t n,
                        const float* k, int64_t k_stride, const float* keys, int64_t m0, int64_t m1,
                        float* s, int64_t s_stride);
  void (*head_dots_f16)(const float* q, int64_t n_rows, int64_t n_kv_head, int64_t n,
                        const uint16_t* k, int64_t k_stride, const float* keys, int64_t m0,
                        int64_t m1, float* s, int64_t s_stride);
  /// Token-major p.v: for m in [m0, m1), in that order, and kv heads h in [h0, h1):
  ///   acc[(h * n_rows + r) * n + i] += p[(h * n_rows + r) * p_stride + m] * row[h * n + i]
  /// with row = v + int64_t(keys[m]) * v_stride; each element pv_*'s bits.
  void (*pv_heads_f32)(const float* p, int64_t p_stride, int64_t n_rows, int64_t h0, int64_t h1,
                       const float* keys, int64_t m0, int64_t m1, const float* v, int64_t v_stride,
                       int64_t n, float* acc);
  void (*pv_heads_f16)(const float* p, int64_t p_stride, int64_t n_rows, int64_t h0, int64_t h1,
                       const float* keys, int64_t m0, int64_t m1, const uint16_t* v,
                       int64_t v_stride, int64_t n, float* acc);
};

/// The kernels for `isa` (the best set at or below it that this binary has).
const Kernels& kernels_for(geniex::cpu::Isa isa);

const Kernels& scalar_kernels();
#if defined(__x86_64__)
const Kernels& avx2_kernels();
const Kernels& avx512_kernels();
#elif defined(__aarch64__)
const Kernels& neon_kernels();
#endif

/// attention() with the kernels of `isa` instead of detect_isa()'s (tests and benchmarks).
Status attention_with_isa(geniex::cpu::Isa isa, ThreadPool& pool, Scratch& scratch, const float* q,
                          KvView k, KvView v, int64_t head_dim, int64_t head_dim_v, int64_t n_head,
                          int64_t n_kv_head, int64_t n_q, int64_t n_kv,
                          std::span<const int32_t> q_pos, std::span<const int32_t> k_pos,
                          const graph::AttentionParams& params, float* out,
                          const KvPaging& paging = {});

}  // namespace geniex::backends::cpu::attn
