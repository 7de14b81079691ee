// CPU implementations of the ops that dominate run time (matmul, attention, rope, embedding).
// The cheap element-wise ops use the scalar references (graph/ref_ops.h) directly.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/repack.h"
#include "backends/cpu/matmul_fusion.h"
#include "core/dtype.h"
#include "core/huge_arena.h"
#include "core/huge_buffer.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "graph/op.h"

namespace geniex::backends::cpu {

/// Where the activations a matmul quantized came from: a node of one graph run. Matmuls that read
/// the same node (q/k/v, gate/up) reuse what the first quantized instead of redoing it. run == 0:
/// not reusable.
struct ActSource {
  uint64_t run = 0;
  uint64_t node = 0;
  bool operator==(const ActSource&) const = default;
};

/// cos / sin of one RoPE op's angles (n_tokens x n_dims / 2, token-major), kept for the other
/// RoPE ops of the same run with the same positions node and parameters (q and k of every
/// layer: Gemma 3 has two bases, so two tables per run).
struct RopeTable {
  ActSource pos;           ///< run and node of the positions
  ActSource freq_factors;  ///< run and node of the frequency factors (run 0: none)
  int64_t n_tokens = 0, n_dims = 0;
  float base = 0.0f, freq_scale = 0.0f;
  uint64_t last_use = 0;
  std::vector<double> cs, sn;
};

/// Scratch memory reused across ops and runs (grown, never shrunk).
struct Scratch {
  /// What `act` / `act_packed` hold: the source, the function that produced it, k and m.
  struct Held {
    ActSource src;
    const void* fn = nullptr;
    int64_t k = 0, m = 0;
    [[nodiscard]] bool matches(const ActSource& s, const void* f, int64_t kk, int64_t mm) const {
      return s.run != 0 && src == s && fn == f && k == kk && m == mm;
    }
  };
  Held act_held, act_packed_held;
  std::vector<uint8_t> act;                    ///< quantized activations of a matmul
  std::vector<uint8_t> act_packed;             ///< the same, prepared for packed kernels
  std::vector<std::vector<float>> per_thread;  ///< attention rows etc., one per thread
  std::vector<std::vector<uint64_t>> masks;    ///< attention key masks, one per thread
  std::vector<int64_t> tiles;                  ///< attention query tiles (first, count)
  std::vector<RopeTable> rope;                 ///< a few recent RoPE tables (rope())
  uint64_t rope_clock = 0;
};

/// y[m, n] = W[n, :] . x[m, :]  (W: n rows of k elements of `wtype`; x: m rows of k floats).
/// `src` names x's node when its quantization may be reused by later matmuls over the same node.
/// `ep` (optional) is applied to each output tile as soon as it is computed (matmul_fusion.h).
Status matmul(ThreadPool& pool, Scratch& scratch, GgmlType wtype, std::span<const uint8_t> w,
              int64_t k, int64_t n, const float* x, int64_t m, float* y, ActSource src = {},
              const MatmulEpilogue* ep = nullptr);

/// A weight matrix repacked for the row-interleaved kernels (kernels/repack.h).
struct PackedMatrix {
  GgmlType type = GgmlType::kF32;
  int64_t k = 0, n = 0;  ///< n rows of k elements
  ::geniex::cpu::PackedKernels kernels{};
  size_t bytes = 0;
  /// `bytes` on huge pages where granted (decode streams all of it every step): in `own`, or in
  /// the arena pack_matrix was given (which outlives this matrix).
  uint8_t* data = nullptr;
  HugeBuffer own;
};

/// Which weights the prepare step repacks into the kernels' row-interleaved layouts.
/// Default: Q4_0; Q8_0 and Q5_0, whose packed kernels give the row kernels' results bit for bit,
/// GEMV and GEMM, so packing them changes no output (kernels/README.md); and Q4_K on x86, whose
/// packed kernel sums in another float order than the row kernel (one fma per super-block
/// instead of 8 lane sums) but is 1.5-2x faster at every row count and keeps the real Gemma 3
/// 270M on llama.cpp's greedy goldens (gemma_fidelity_test). The packed Q6_K kernel sums in yet
/// another order, which moves that model off llama.cpp on near-tie greedy steps with a
/// Q8_0 / Q4_0 KV cache (q8_0 agreement 9/10 -> 6/10 for an earlier Q4_K kernel, measured), and
/// is no faster than the Q6_K row kernel: opt-in. CpuRepack::kAll repacks every supported type,
/// kNone none (A/B benchmarks; CpuTuning::repack).
bool repack_enabled(GgmlType t, CpuRepack policy = CpuRepack::kDefault);

/// Repacks W (n rows of k elements of `wtype`) over the pool into `arena` (the backend's: every
/// weight side by side on huge pages), or without one into a HugeBuffer of its own (on huge pages
/// from 2 MiB up unless `huge_pages` is false), then releases W's pages (contents kept: see
/// op_matmul_packed.cpp). Null when the type (at the dispatched ISA) or shape has no packed
/// kernel, or the copy cannot be allocated; matmul() then serves W itself.
std::unique_ptr<PackedMatrix> pack_matrix(ThreadPool& pool, GgmlType wtype,
                                          std::span<const uint8_t> w, int64_t k, int64_t n,
                                          bool huge_pages = true, HugeArena* arena = nullptr);

/// Weights from this size up that have no packed layout are worth a huge-page copy.
inline constexpr size_t kMinHugePageCopy = size_t{64} << 10;

/// A weight of at least kMinHugePageCopy bytes that has no packed layout, copied over the pool
/// into `arena` (on huge pages), W's pages released slice by slice as pack_matrix does. Null when
/// huge pages are not available (huge_pages_available(), or the arena's chunk was not advised:
/// an arena on plain pages, CpuTuning::huge_pages off), W is smaller, or the copy cannot be
/// allocated: then keep reading W.
const uint8_t* copy_to_huge_pages(ThreadPool& pool, std::span<const uint8_t> w, HugeArena& arena);

/// matmul() with packed weights: y[m, w.n] = W . x[m, w.k].
Status matmul_packed(ThreadPool& pool, Scratch& scratch, const PackedMatrix& w, const float* x,
                     int64_t m, float* y, ActSource src = {}, const MatmulEpilogue* ep = nullptr);

/// embedding() over a table that was packed for the matmuls (a tied LM head): its original pages
/// were handed back after packing, so reading them costs page faults on every lookup. Rows come
/// from the packed copy instead, unpacked to the original blocks (the same values). False when
/// the packed type has no unpacking (kernels::unpack_row): then read the original table.
Result<bool> embedding_packed(ThreadPool& pool, const PackedMatrix& table,
                              std::span<const int32_t> ids, float* out);

/// y[i] = fp32_to_fp16(x[i]) for i < n, bit for bit, with F16C / NEON where there is one.
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n);

/// kOutOfRange naming the first id outside [0, n_vocab).
Status check_token_ids(std::span<const int32_t> ids, int64_t n_vocab);

/// out[:, t] = row ids[t] of the table, dequantized.
Status embedding(ThreadPool& pool, GgmlType type, std::span<const uint8_t> table, int64_t n_embd,
                 int64_t n_vocab, std::span<const int32_t> ids, float* out);

/// RoPE of x [head_dim, n_head, n_tokens] (see graph::RopeParams); sin/cos once per token, and
/// when `pos_src` names the positions node (and `ff_src` the frequency factors' node, if any),
/// once per run for every RoPE op with the same nodes and parameters (Scratch::rope).
/// Bit-identical to graph::ref::rope either way.
Status rope(ThreadPool& pool, Scratch& scratch, const float* x, int64_t head_dim, int64_t n_head,
            int64_t n_tokens, std::span<const int32_t> pos, const graph::RopeParams& p,
            std::span<const float> freq_factors, float* y, ActSource pos_src = {},
            ActSource ff_src = {});

/// RMSNorm of `rows` rows of n floats (w: n weights, or null), bit-identical to
/// graph::ref::rms_norm; several rows' sums of squares run at once (op_norm.cpp).
void rms_norm_rows(ThreadPool& pool, const float* x, const float* w, int64_t n, int64_t rows,
                   float eps, float* y);

/// LayerNorm of `rows` rows of n floats (w, b: n weights / biases, or null), bit-identical to
/// graph::ref::layer_norm; several rows' sums run at once (op_layer_norm.cpp).
void layer_norm_rows(ThreadPool& pool, const float* x, const float* w, const float* b, int64_t n,
                     int64_t rows, float eps, float* y);
/// y[i] = the exact GELU of x[i], graph::ref::gelu_erf's value (op_layer_norm.cpp); y may alias x.
void gelu_erf_rows(const float* x, float* y, int64_t n);

/// ggml's GELU: f16 table lookup of the rounded input (see op_activation.cpp).
float gelu_f16_table(float x);
/// y[i] = gelu(x[i]) * up[i] (up may be null: y = gelu(x)), with gelu_f16_table's numerics.
void gelu_rows(const float* x, const float* up, float* y, int64_t n);
/// y[i] = silu(x[i]) * up[i] (up may be null: y = silu(x) = x / (1 + e^-x)), SIMD with e^x from
/// kernels/exp_simd.h: <= 2 ULP from graph::ref::silu, <= 3 ULP from ref::glu (op_silu.cpp).
/// y may alias x or up exactly.
void silu_rows(const float* x, const float* up, float* y, int64_t n);
/// silu_rows() with the kernel of `isa` (or the best available below it) instead of
/// detect_isa()'s (tests and benchmarks).
void silu_rows_isa(::geniex::cpu::Isa isa, const float* x, const float* up, float* y, int64_t n);

/// One Walsh-Hadamard block of n floats (n a power of two): y = H_n x / sqrt(n) in ggml's
/// float operation order (op_hadamard.cpp); y may alias x.
void hadamard_block(const float* x, int64_t n, float* y);
/// hadamard_block() over the count / n blocks of x, split over the pool.
void hadamard(ThreadPool& pool, const float* x, int64_t n, int64_t count, float* y);

/// Operands of kShortConv / kShortConvState (graph::ref::short_conv's layout): u [E, T],
/// w [L, E] (tap j of channel c at c * L + j), state [E, L-1, n_slots] and seq [T] (slot per
/// token, < 0: padding), or state = seq = nullptr for one fresh sequence (n_slots 1).
struct ShortConvArgs {
  const float* u = nullptr;
  int64_t n_embd = 0, n_tokens = 0;
  const float* w = nullptr;  ///< unused when only the new state is wanted
  int64_t n_taps = 0;
  const float* state = nullptr;
  int64_t n_slots = 1;
  const int32_t* seq = nullptr;
};
/// Writes conv [E, T] and/or new_state [E, L-1, n_slots] (either may be null), in
/// ggml_ssm_conv's float order (op_short_conv.cpp); a slot outside [0, n_slots) → kOutOfRange.
Status short_conv(const ShortConvArgs& args, float* conv, float* new_state);

/// A K or V operand of attention: rows of `head_dim` per (state row, kv head) stored as F32, F16,
/// Q8_0 or Q4_0 (block types: each head's row is whole blocks).
struct KvView {
  GgmlType type = GgmlType::kF32;
  const uint8_t* data = nullptr;
};

/// Paged addressing of attention (graph kAttention's optional k_rows and q_seg; see
/// graph::ref::AttentionPaging for the contract).
struct KvPaging {
  int64_t n_rows = 0;               ///< rows of k and v; 0: n_kv (required without k_rows)
  std::span<const int32_t> k_rows;  ///< empty, or n_kv rows in [0, n_rows)
  std::span<const int32_t> q_seg;   ///< empty, or (begin, end) per query
};

/// Attention over q [d, n_head, n_q] and k/v [d(v), n_kv_head, n_rows] (graph::ref::attention's
/// contract), key list entry j at row `paging.k_rows[j]` (or j). With an F16 cache it rounds q
/// and the probabilities to f16 as ggml's non-flash path does, so results track llama.cpp; with
/// Q8_0 / Q4_0 K and V it follows graph::ref::attention_blocks (ggml's flash attention). K and V
/// must both be F32/F16 or both Q8_0/Q4_0 (kInvalidArgument). Bad rows or segments are
/// kOutOfRange; nothing outside k and v is read.
Status attention(ThreadPool& pool, Scratch& scratch, const float* q, KvView k, KvView v,
                 int64_t head_dim, int64_t head_dim_v, int64_t n_head, int64_t n_kv_head,
                 int64_t n_q, int64_t n_kv, std::span<const int32_t> q_pos,
                 std::span<const int32_t> k_pos, const graph::AttentionParams& params, float* out,
                 const KvPaging& paging = {});

}  // namespace geniex::backends::cpu
