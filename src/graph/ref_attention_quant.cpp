// Reference attention over a Q8_0 / Q4_0 KV cache, following llama.cpp's CPU flash attention
// (ggml_compute_forward_flash_attn_ext_f16_one_chunk) operation by operation: the query row
// quantized to K's vec-dot partner type, f32 scores from the block dot product, an f32 online
// softmax that rescales the accumulator whenever the running maximum grows, and V rows
// dequantized to f32 before they are added. One query row at a time, keys in list order.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/ref_ops.h"
#include "quant/quant.h"

namespace geniex::graph::ref {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

bool is_block_kv(GgmlType t) { return t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0; }

// Bytes of one head's row of `n` elements, or 0 when `n` is not whole blocks.
size_t head_bytes(GgmlType t, int64_t n) {
  const auto b = ggml_row_bytes(t, static_cast<uint64_t>(n));
  return b ? static_cast<size_t>(*b) : 0;
}

}  // namespace

Status attention_blocks(std::span<const float> q, const BlockKv& k, const BlockKv& v,
                        const AttentionDims& d, std::span<const int32_t> q_pos,
                        std::span<const int32_t> k_pos, const AttentionParams& params,
                        const AttentionPaging& paging, std::span<float> out) {
  const int64_t n_rows = d.n_rows == 0 ? d.n_kv : d.n_rows;
  if (!is_block_kv(k.type) || !is_block_kv(v.type)) {
    return invalid_argument("attention_blocks: k and v must be Q8_0 or Q4_0, got " +
                            std::string(ggml_type_name(k.type)) + " and " +
                            std::string(ggml_type_name(v.type)));
  }
  if (d.head_dim <= 0 || d.head_dim_v <= 0 || d.n_head <= 0 || d.n_kv_head <= 0 || d.n_q <= 0 ||
      d.n_kv <= 0 || n_rows <= 0 || d.n_head % d.n_kv_head != 0) {
    return invalid_argument(
        "attention_blocks: sizes must be positive and n_head a multiple of "
        "n_kv_head");
  }
  const size_t kb = head_bytes(k.type, d.head_dim), vb = head_bytes(v.type, d.head_dim_v);
  if (kb == 0 || vb == 0) {
    return invalid_argument("attention_blocks: head_dim " + std::to_string(d.head_dim) +
                            " / head_dim_v " + std::to_string(d.head_dim_v) +
                            " is not a multiple of the block size");
  }
  if (q.size() != sz(d.head_dim * d.n_head * d.n_q) ||
      k.bytes.size() != kb * sz(d.n_kv_head * n_rows) ||
      v.bytes.size() != vb * sz(d.n_kv_head * n_rows) ||
      out.size() != sz(d.head_dim_v * d.n_head * d.n_q) || q_pos.size() != sz(d.n_q) ||
      k_pos.size() != sz(d.n_kv)) {
    return invalid_argument("attention_blocks: a buffer size does not match the dims");
  }
  GENIEX_TRY(check_attention_paging(d, paging));
  const GgmlType qt = quant::vec_dot_type(k.type);
  const size_t qb = head_bytes(qt, d.head_dim);
  std::vector<uint8_t> q8(qb);
  std::vector<float> acc(sz(d.head_dim_v)), v32(sz(d.head_dim_v));
  const int64_t group = d.n_head / d.n_kv_head;
  // ggml folds the cap into the scale: s = cap * tanhf(dot * (scale / cap)). std::exp and
  // std::tanh of a float are expf and tanhf.
  const float scale = params.softcap > 0.0f ? params.scale / params.softcap : params.scale;
  for (int64_t t = 0; t < d.n_q; ++t) {
    const int64_t seg_begin = paging.q_seg.empty() ? 0 : paging.q_seg[sz(2 * t)];
    const int64_t seg_end = paging.q_seg.empty() ? d.n_kv : paging.q_seg[sz(2 * t + 1)];
    for (int64_t h = 0; h < d.n_head; ++h) {
      const int64_t kvh = h / group;
      GENIEX_TRY(quant::quantize_row(
          qt, q.subspan(sz((t * d.n_head + h) * d.head_dim), sz(d.head_dim)), q8));
      float m = -std::numeric_limits<float>::infinity();
      float s_sum = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = seg_begin; j < seg_end; ++j) {
        if (!attention_visible(q_pos[sz(t)], k_pos[sz(j)], params)) continue;
        const int64_t row = paging.k_rows.empty() ? j : paging.k_rows[sz(j)];
        const size_t head = sz(row * d.n_kv_head + kvh);
        GENIEX_ASSIGN_OR_RETURN(float s, quant::vec_dot_ref(k.type, k.bytes.subspan(head * kb, kb),
                                                            q8, sz(d.head_dim)));
        s = s * scale;
        if (params.softcap > 0.0f) s = params.softcap * std::tanh(s);
        float ms = 1.0f, vs = 1.0f;
        if (s > m) {
          ms = std::exp(m - s);
          m = s;
          for (float& a : acc) a *= ms;
        } else {
          vs = std::exp(s - m);
        }
        GENIEX_TRY(quant::dequantize_row(v.type, v.bytes.subspan(head * vb, vb), v32));
        for (size_t i = 0; i < acc.size(); ++i) acc[i] += v32[i] * vs;
        s_sum = s_sum * ms + vs;
      }
      const float inv = s_sum == 0.0f ? 0.0f : 1.0f / s_sum;
      float* o = out.data() + sz((t * d.n_head + h) * d.head_dim_v);
      for (size_t i = 0; i < acc.size(); ++i) o[i] = acc[i] * inv;
    }
  }
  return {};
}

}  // namespace geniex::graph::ref
