// Scalar reference implementations of every graph op, callable directly on spans so that each
// backend kernel can be checked against them op by op. Single-threaded, portable, no SIMD.
//
// Numerics (documented so backends know what "matching the oracle" means):
// * matmul: each activation row is quantized once to quant::vec_dot_type(w) and dotted with
//   quant::vec_dot_ref, exactly ggml's scheme (GGUF.md §5.2). F32 weights go through the same
//   path: products rounded to float, summed in double, result rounded to float.
// * rms_norm, softmax: sums in double; rope: angles, sin and cos in double; attention over
//   F32/F16 k and v: scores and weighted sums in double. Outputs are rounded to f32 once.
// * attention over Q8_0/Q4_0 k and v (attention_blocks): llama.cpp's flash-attention numerics in
//   f32 (quantized q . k dots, online softmax), so that quantized caches track llama.cpp.
// * Shapes are ggml's: ne[0] contiguous; sizes are checked and reported through Status.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/status.h"
#include "graph/op.h"

namespace geniex::graph::ref {

/// y[n, m] = sum_k W[k, n] * x[k, m]; `w` holds N rows of K elements of type `wtype`, `x` M rows
/// of K floats, `y` M rows of N floats.
Status matmul(GgmlType wtype, std::span<const uint8_t> w, int64_t k, int64_t n,
              std::span<const float> x, int64_t m, std::span<float> y);

/// out[:, t] = dequantized row ids[t] of `table` (n_vocab rows of n_embd elements of `type`).
/// An id outside [0, n_vocab) is kOutOfRange.
Status embedding(GgmlType type, std::span<const uint8_t> table, int64_t n_embd, int64_t n_vocab,
                 std::span<const int32_t> ids, std::span<float> out);

/// Per row of `n`: y = x / sqrt(mean(x^2) + eps), times w[i] when `w` is not empty.
Status rms_norm(std::span<const float> x, std::span<const float> w, int64_t n, float eps,
                std::span<float> y);

/// rms_norm's sum of squares of one row: Σ double(x_i)^2, added in index order.
double rms_sum_squares(const float* x, int64_t n);

/// rms_norm's scaling of one row (w may be null) given rms_sum_squares(x, n): what a faster
/// backend calls after computing the same sum its own way, so both agree to the bit.
void rms_norm_row(const float* x, const float* w, int64_t n, double sum_sq, float eps, float* y);

/// kLayerNorm, per row of `n`: y = (x - mean) / sqrt(var + eps) (* w[i]) (+ b[i]), var the biased
/// (population) variance; `w` and `b` may each be empty. Mean and variance (two passes, sums in
/// double in index order) and the result in double, rounded once to float.
Status layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                  int64_t n, float eps, std::span<float> y);

/// layer_norm's first pass over one row: Σ double(x_i), added in index order.
double layer_norm_sum(const float* x, int64_t n);
/// layer_norm's second pass: Σ (double(x_i) - mean)^2, added in index order.
double layer_norm_sum_sq_dev(const float* x, int64_t n, double mean);
/// layer_norm's scaling of one row (w, b may be null) given mean = layer_norm_sum / n and
/// sum_sq_dev = layer_norm_sum_sq_dev(x, n, mean): what a faster backend calls after computing
/// the same sums its own way, so both agree to the bit.
void layer_norm_row(const float* x, const float* w, const float* b, int64_t n, double mean,
                    double sum_sq_dev, float eps, float* y);

/// Per row of `n`: y = softmax(x * scale). -inf entries get weight 0; a row that is entirely -inf
/// gives all zeros (not NaN).
Status softmax(std::span<const float> x, int64_t n, float scale, std::span<float> y);

/// RoPE of x [head_dim, n_head, n_tokens] at positions pos[n_tokens]; `freq_factors` is empty or
/// has n_dims/2 entries (angles are divided by them). See RopeParams for the formula.
Status rope(std::span<const float> x, int64_t head_dim, int64_t n_head, int64_t n_tokens,
            std::span<const int32_t> pos, const RopeParams& params,
            std::span<const float> freq_factors, std::span<float> y);

/// Sizes of an attention call.
struct AttentionDims {
  int64_t head_dim = 0;    ///< q/k head size
  int64_t head_dim_v = 0;  ///< v head size (output head size)
  int64_t n_head = 0;      ///< query heads
  int64_t n_kv_head = 0;   ///< key/value heads; query head h uses kv head h / (n_head/n_kv_head)
  int64_t n_q = 0;         ///< query tokens
  int64_t n_kv = 0;        ///< entries of the key list (k_pos, k_rows)
  int64_t n_rows = 0;      ///< rows of k and v; 0 means n_kv (required without k_rows)
};

/// Paged addressing of attention (kAttention's optional inputs k_rows and q_seg).
struct AttentionPaging {
  /// Empty: key list entry j is row j of k and v. Else n_kv entries: entry j is row k_rows[j],
  /// each in [0, n_rows) (checked, kOutOfRange), whether or not any query sees it.
  std::span<const int32_t> k_rows;
  /// Empty: no segments. Else 2 * n_q entries, (begin, end) per query: query i sees only list
  /// entries j in [q_seg[2i], q_seg[2i+1]), on top of the positional mask. Requires k_rows;
  /// 0 <= begin <= end <= n_kv (checked, kOutOfRange).
  std::span<const int32_t> q_seg;
};

/// Checks `paging` against `dims` (sizes: kInvalidArgument; row or segment bounds: kOutOfRange).
Status check_attention_paging(const AttentionDims& dims, const AttentionPaging& paging);

/// Naive attention: q [d, n_head, n_q], k [d, n_kv_head, n_rows], v [dv, n_kv_head, n_rows] ->
/// out [dv, n_head, n_q]. Masking per AttentionParams and `paging`; a query with no visible key
/// gets zeros.
Status attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                 const AttentionDims& dims, std::span<const int32_t> q_pos,
                 std::span<const int32_t> k_pos, const AttentionParams& params,
                 const AttentionPaging& paging, std::span<float> out);

/// attention() without paging (key j is row j, no segments).
Status attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                 const AttentionDims& dims, std::span<const int32_t> q_pos,
                 std::span<const int32_t> k_pos, const AttentionParams& params,
                 std::span<float> out);

/// K or V rows stored as a block type: n_rows rows of n_kv_head heads, each head its own row of
/// whole blocks (head_dim a multiple of the block size).
struct BlockKv {
  GgmlType type = GgmlType::kQ8_0;  ///< Q8_0 or Q4_0
  std::span<const uint8_t> bytes;   ///< exactly n_rows * n_kv_head * row_bytes(type, head_dim)
};

/// Attention over a Q8_0 / Q4_0 KV cache with llama.cpp's CPU flash-attention numerics
/// (ggml_compute_forward_flash_attn_ext_f16, the path llama.cpp requires for a quantized V
/// cache), same masking and paging as attention(). Per query row (token, head), in f32:
/// q is quantized to quant::vec_dot_type(k.type) (Q8_0); for each visible key in list order
/// s = vec_dot(k_row, q8) * scale' with scale' = scale / softcap and s = softcap * tanhf(s) when
/// capped (else scale' = scale); then the online softmax: if s > M { ms = expf(M - s); M = s;
/// acc *= ms; vs = 1 } else { ms = 1; vs = expf(s - M) }; acc += dequant(v_row) * vs;
/// S = S * ms + vs. Output acc * (1 / S), zeros when no key is visible.
Status attention_blocks(std::span<const float> q, const BlockKv& k, const BlockKv& v,
                        const AttentionDims& dims, std::span<const int32_t> q_pos,
                        std::span<const int32_t> k_pos, const AttentionParams& params,
                        const AttentionPaging& paging, std::span<float> out);

/// True when key position `kp` is visible to query position `qp` under `params`.
bool attention_visible(int32_t qp, int32_t kp, const AttentionParams& params);

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in double, rounded to float.
float gelu_tanh(float x);
/// x / (1 + exp(-x)), in double, rounded to float.
float silu(float x);

/// Exact GELU, 0.5 x (1 + erf(x / sqrt(2))), in double (as 0.5 x erfc(-x / sqrt(2)), which keeps
/// its relative accuracy for negative x), rounded once.
float gelu_erf(float x);

/// Elementwise y = f(x) for kGelu, kGeluErf, kSilu, kScale (x * scale) and kSoftcap
/// (scale*tanh(x/scale)).
Status unary(OpKind kind, std::span<const float> x, float scale, std::span<float> y);

/// kHadamard: each run of `n` elements of x (n a power of two dividing x.size()) becomes
/// H_n x / sqrt(n), the fast Walsh-Hadamard transform in Sylvester (natural) order, in double,
/// rounded once to float.
Status hadamard(std::span<const float> x, int32_t n, std::span<float> y);

/// kShortConv and kShortConvState (LFM2's causal depthwise conv), in double, rounded once:
/// u [E, T], w [L, E] (element c * L + j is tap j of channel c; tap L-1 meets the current
/// token), state [E, L-1, S] and seq [T] (slot of each token, < 0: padding), or both empty for
/// one fresh sequence (zero history). Writes conv [E, T] (padding tokens: 0) and/or new_state
/// [E, L-1, S] (each slot: the last L-1 columns of its state followed by its tokens; slots
/// without tokens unchanged) unless the span is empty. Slots outside [0, S) → kOutOfRange.
Status short_conv(std::span<const float> u, int64_t n_embd, int64_t n_tokens,
                  std::span<const float> w, int64_t n_taps, std::span<const float> state,
                  std::span<const int32_t> seq, std::span<float> conv, std::span<float> new_state);

/// y = act(gate) * up, elementwise.
Status glu(GluActivation act, std::span<const float> gate, std::span<const float> up,
           std::span<float> y);

/// y = a (op) b for kAdd / kMul, with b broadcast along every dim where b_ne[i] == 1.
Status binary(OpKind kind, std::span<const float> a, const std::array<int64_t, 4>& a_ne,
              std::span<const float> b, const std::array<int64_t, 4>& b_ne, std::span<float> y);

}  // namespace geniex::graph::ref
