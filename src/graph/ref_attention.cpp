// Naive reference attention: scores in double, max-subtracted softmax, GQA by head grouping, keys
// addressed through an optional row list and limited to optional per-query segments.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/ref_ops.h"

namespace geniex::graph::ref {
namespace {
size_t sz(int64_t v) { return static_cast<size_t>(v); }
}  // namespace

bool attention_visible(int32_t qp, int32_t kp, const AttentionParams& params) {
  if (kp < 0) return false;  // empty / padded KV slot
  if (params.causal && kp > qp) return false;
  if (params.sliding_window > 0 &&
      static_cast<int64_t>(qp) - static_cast<int64_t>(kp) >= params.sliding_window) {
    return false;
  }
  return true;
}

Status check_attention_paging(const AttentionDims& d, const AttentionPaging& paging) {
  const int64_t n_rows = d.n_rows == 0 ? d.n_kv : d.n_rows;
  if (paging.k_rows.empty()) {
    if (!paging.q_seg.empty()) return invalid_argument("attention: q_seg requires k_rows");
    if (n_rows != d.n_kv) {
      return invalid_argument("attention: without k_rows, k and v must have n_kv rows");
    }
    return {};
  }
  if (paging.k_rows.size() != sz(d.n_kv)) {
    return invalid_argument("attention: k_rows has " + std::to_string(paging.k_rows.size()) +
                            " entries, expected n_kv = " + std::to_string(d.n_kv));
  }
  for (size_t j = 0; j < paging.k_rows.size(); ++j) {
    if (paging.k_rows[j] < 0 || paging.k_rows[j] >= n_rows) {
      return out_of_range("attention: k_rows[" + std::to_string(j) +
                          "] = " + std::to_string(paging.k_rows[j]) + " outside [0, " +
                          std::to_string(n_rows) + ")");
    }
  }
  if (paging.q_seg.empty()) return {};
  if (paging.q_seg.size() != 2 * sz(d.n_q)) {
    return invalid_argument("attention: q_seg has " + std::to_string(paging.q_seg.size()) +
                            " entries, expected 2 * n_q = " + std::to_string(2 * d.n_q));
  }
  for (int64_t i = 0; i < d.n_q; ++i) {
    const int32_t b = paging.q_seg[sz(2 * i)], e = paging.q_seg[sz(2 * i + 1)];
    if (b < 0 || b > e || e > d.n_kv) {
      return out_of_range("attention: q_seg of query " + std::to_string(i) + " = [" +
                          std::to_string(b) + ", " + std::to_string(e) +
                          ") is not a range inside [0, " + std::to_string(d.n_kv) + "]");
    }
  }
  return {};
}

Status attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                 const AttentionDims& d, std::span<const int32_t> q_pos,
                 std::span<const int32_t> k_pos, const AttentionParams& params,
                 std::span<float> out) {
  return attention(q, k, v, d, q_pos, k_pos, params, AttentionPaging{}, out);
}

Status attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                 const AttentionDims& d, std::span<const int32_t> q_pos,
                 std::span<const int32_t> k_pos, const AttentionParams& params,
                 const AttentionPaging& paging, std::span<float> out) {
  const int64_t n_rows = d.n_rows == 0 ? d.n_kv : d.n_rows;
  if (d.head_dim <= 0 || d.head_dim_v <= 0 || d.n_head <= 0 || d.n_kv_head <= 0 || d.n_q <= 0 ||
      d.n_kv <= 0 || n_rows <= 0 || d.n_head % d.n_kv_head != 0) {
    return invalid_argument(
        "attention: sizes must be positive and n_head a multiple of "
        "n_kv_head (n_head=" +
        std::to_string(d.n_head) + ", n_kv_head=" + std::to_string(d.n_kv_head) + ")");
  }
  if (q.size() != sz(d.head_dim * d.n_head * d.n_q) ||
      k.size() != sz(d.head_dim * d.n_kv_head * n_rows) ||
      v.size() != sz(d.head_dim_v * d.n_kv_head * n_rows) ||
      out.size() != sz(d.head_dim_v * d.n_head * d.n_q) || q_pos.size() != sz(d.n_q) ||
      k_pos.size() != sz(d.n_kv)) {
    return invalid_argument("attention: a buffer size does not match the dims");
  }
  GENIEX_TRY(check_attention_paging(d, paging));
  const int64_t group = d.n_head / d.n_kv_head;
  std::vector<double> s(sz(d.n_kv));
  std::vector<double> acc(sz(d.head_dim_v));
  for (int64_t t = 0; t < d.n_q; ++t) {
    const int64_t seg_begin = paging.q_seg.empty() ? 0 : paging.q_seg[sz(2 * t)];
    const int64_t seg_end = paging.q_seg.empty() ? d.n_kv : paging.q_seg[sz(2 * t + 1)];
    for (int64_t h = 0; h < d.n_head; ++h) {
      const int64_t kvh = h / group;
      const float* qr = q.data() + sz((t * d.n_head + h) * d.head_dim);
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < d.n_kv; ++j) {
        if (j < seg_begin || j >= seg_end ||
            !attention_visible(q_pos[sz(t)], k_pos[sz(j)], params)) {
          s[sz(j)] = -std::numeric_limits<double>::infinity();
          continue;
        }
        const int64_t row = paging.k_rows.empty() ? j : paging.k_rows[sz(j)];
        const float* kr = k.data() + sz((row * d.n_kv_head + kvh) * d.head_dim);
        double dot = 0.0;
        for (int64_t i = 0; i < d.head_dim; ++i) dot += static_cast<double>(qr[i]) * kr[i];
        double score = dot * params.scale;
        if (params.softcap > 0.0f) score = params.softcap * std::tanh(score / params.softcap);
        s[sz(j)] = score;
        mx = std::max(mx, score);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      double sum = 0.0;
      if (mx != -std::numeric_limits<double>::infinity()) {
        for (int64_t j = 0; j < d.n_kv; ++j) {
          if (s[sz(j)] == -std::numeric_limits<double>::infinity()) continue;
          const double p = std::exp(s[sz(j)] - mx);
          sum += p;
          const int64_t row = paging.k_rows.empty() ? j : paging.k_rows[sz(j)];
          const float* vr = v.data() + sz((row * d.n_kv_head + kvh) * d.head_dim_v);
          for (int64_t i = 0; i < d.head_dim_v; ++i) acc[sz(i)] += p * vr[i];
        }
      }
      float* o = out.data() + sz((t * d.n_head + h) * d.head_dim_v);
      for (int64_t i = 0; i < d.head_dim_v; ++i) {
        o[i] = sum > 0.0 ? static_cast<float>(acc[sz(i)] / sum) : 0.0f;
      }
    }
  }
  return {};
}

}  // namespace geniex::graph::ref
