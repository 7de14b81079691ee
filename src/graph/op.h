// The op vocabulary of the GenieX graph IR: op kinds, their parameters and tensor descriptors.
// Shapes follow ggml: ne[0] is the contiguous dimension, unused trailing dimensions are 1.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace geniex::graph {

/// What a node computes. Input lists are given per kind; every activation is F32 and every
/// position / token id tensor is I32 (see README.md for the full table).
enum class OpKind : uint8_t {
  kEmbedding,   ///< {table [E, V] any dequantizable type, ids [T] I32} -> [E, T] (get_rows)
  kMatMul,      ///< {w [K, N] any vec_dot type, x [K, M, B2, B3]} -> [N, M, B2, B3]
  kRmsNorm,     ///< {x} or {x, w [ne0]}: x / sqrt(mean(x^2) + eps) (* w, fused when given)
  kRope,        ///< {x [d, H, T], pos [T] I32} or {.., freq_factors [n_dims/2]} -> [d, H, T]
  kAttention,   ///< {q [d, Hq, Tq], k [d, Hkv, S], v [dv, Hkv, S], q_pos [Tq], k_pos [Tk]
                ///<  (, k_rows [Tk] (, q_seg [2, Tq]))} -> [dv, Hq, Tq]. Key j is row k_rows[j]
                ///<   of k / v (without k_rows: row j, and S == Tk); query i sees only keys j in
                ///<   [q_seg[0, i], q_seg[1, i]). k, v: F32/F16, or both Q8_0/Q4_0 (see README.md)
  kSoftmax,     ///< {x}: softmax over ne[0] of x * scale (scale defaults to 1)
  kGelu,        ///< {x}: tanh-approximated GELU (HF gelu_pytorch_tanh, ggml GELU)
  kSilu,        ///< {x}: x * sigmoid(x)
  kMul,         ///< {a, b}: a * b, b broadcast where its ne[i] == 1
  kAdd,         ///< {a, b}: a + b, b broadcast where its ne[i] == 1
  kScale,       ///< {x}: x * scale
  kSoftcap,     ///< {x}: cap * tanh(x / cap) (final-logit softcapping)
  kGlu,         ///< {gate, up}: act(gate) * up, act = SiLU (SwiGLU) or GELU-tanh (GeGLU)
  kReshape,     ///< {x}: same elements, new shape `OpParams::ne` (a view; the reference copies)
  kGetRows,     ///< {x [E, T, 1, 1], idx [n] I32} -> [E, n]: rows idx of x (e.g. the last token)
  kCacheWrite,  ///< {state [E0, E1, S] F32/F16/Q8_0/Q4_0, src [E0, E1, T], slots [T] I32}
                ///<   -> the state, after writing src token t into state row slots[t] (an alias)
  kHadamard,    ///< {x}: each run of n = OpParams::hadamard_n elements (n a power of two dividing
                ///<   ne[0]) becomes H_n x / sqrt(n), H_n the Sylvester Walsh-Hadamard matrix
                ///<   (orthonormal and its own inverse): llama.cpp's rotation of Q/K/V around a
                ///<   quantized KV cache
  kShortConv,   ///< {u [E, T], w [L, E] (, state [E, L-1, S], seq [T] I32)} -> [E, T]: causal
                ///<   depthwise conv, out[c, t] = sum_j w[j, c] * h[c, t - (L-1) + j] (LFM2).
                ///<   The history h of token t: its slot's state columns (oldest first), then
                ///<   the earlier tokens of the batch in the same slot seq[t] (seq[t] < 0:
                ///<   padding, output 0). Without state / seq: one fresh sequence (zeros)
  kShortConvState,  ///< {u [E, T], state [E, L-1, S], seq [T] I32} -> [E, L-1, S]: each slot's
                    ///<   state advanced by its tokens (the last L-1 columns of state ++ u)
  kLayerNorm,  ///< {x}, {x, w [ne0]} or {x, w, b [ne0]}: (x - mean) / sqrt(var + eps) (* w) (+ b)
               ///<   over ne[0] of each row, var the biased variance (PyTorch nn.LayerNorm)
  kGeluErf,    ///< {x}: exact GELU 0.5 x (1 + erf(x / sqrt(2))) (PyTorch / HF "gelu")
};

/// The last kind, for loops over every kind.
inline constexpr OpKind kLastOpKind = OpKind::kGeluErf;
/// Largest kHadamard block width (a head is at most a few hundred elements).
inline constexpr int32_t kMaxHadamardN = 4096;

/// Name of a kind for messages, e.g. "MatMul".
std::string_view op_name(OpKind kind);

/// RoPE pairing. kNormal: adjacent pairs (x[2i], x[2i+1]) (llama GGUF). kNeox: halves
/// (x[i], x[i + n_dims/2]) (qwen2/qwen3/gemma3, HF rotate_half).
enum class RopeMode : uint8_t { kNormal, kNeox };

/// Activation of a kGlu node.
enum class GluActivation : uint8_t { kSilu, kGeluTanh };

/// theta_i = pos * freq_scale * base^(-2i/n_dims) / freq_factor[i], i in [0, n_dims/2).
/// Elements at index >= n_dims of each head pass through unchanged.
struct RopeParams {
  RopeMode mode = RopeMode::kNormal;
  int32_t n_dims = 0;  ///< rotated dims per head; 0 means the whole head (ne[0])
  float base = 10000.0f;
  float freq_scale = 1.0f;
};

/// Masking and scaling of kAttention. A key j is visible to query i iff k_pos[j] >= 0, and when
/// causal k_pos[j] <= q_pos[i], and when sliding_window > 0 q_pos[i] - k_pos[j] < sliding_window.
struct AttentionParams {
  float scale = 1.0f;          ///< multiplies q.k (1/sqrt(d) for most models)
  bool causal = true;          ///< hide keys at later positions than the query
  int32_t sliding_window = 0;  ///< 0: none; else the window including the current token
  float softcap = 0.0f;        ///< 0: none; else scores become softcap * tanh(score / softcap)
};

/// Per-kind parameters; fields a kind does not use are ignored.
struct OpParams {
  float eps = 1e-6f;                         ///< kRmsNorm, kLayerNorm
  float scale = 1.0f;                        ///< kScale factor, kSoftmax input scale, kSoftcap cap
  RopeParams rope;                           ///< kRope
  AttentionParams attn;                      ///< kAttention
  GluActivation glu = GluActivation::kSilu;  ///< kGlu
  std::array<int64_t, 4> ne = {1, 1, 1, 1};  ///< kReshape target shape
  int32_t hadamard_n = 0;                    ///< kHadamard block width
};

/// Element type and shape of a tensor; unused trailing dimensions are 1.
struct TensorDesc {
  GgmlType dtype = GgmlType::kF32;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};

  /// Number of elements (product of ne).
  [[nodiscard]] int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  /// Number of rows of ne[0] elements.
  [[nodiscard]] int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
  /// "F32[4, 2, 1, 1]"-style text for messages.
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const TensorDesc&, const TensorDesc&) = default;
};

/// A descriptor with the given type and up to four dims (missing dims are 1).
TensorDesc make_desc(GgmlType dtype, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1,
                     int64_t ne3 = 1);

}  // namespace geniex::graph
