#include "backends/npu/qnn/qnn_host.h"

#include <cmath>
#include <cstring>

#include "core/fp16.h"

namespace geniex::npu_qnn {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

}  // namespace

Buffers::Buffers(const geniex_npu_buffer* buffers, uint32_t n) {
  for (uint32_t i = 0; buffers != nullptr && i < n; ++i) by_id_[buffers[i].tensor_id] = &buffers[i];
}

Result<const geniex_npu_buffer*> Buffers::get(uint32_t id, const std::string& what) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second->data == nullptr) {
    return invalid_argument("qnn-htp execute: no buffer for " + what + " (tensor " +
                            std::to_string(id) + ")");
  }
  return it->second;
}

Result<std::span<const int32_t>> Buffers::ints(uint32_t id, int64_t n,
                                               const std::string& what) const {
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_buffer* b, get(id, what));
  if (b->bytes != static_cast<uint64_t>(n) * 4) {
    return invalid_argument("qnn-htp execute: " + what + " needs " + std::to_string(n * 4) +
                            " bytes, got " + std::to_string(b->bytes));
  }
  return std::span<const int32_t>(static_cast<const int32_t*>(b->data), sz(n));
}

Result<uint8_t*> Buffers::state(uint32_t id, uint64_t bytes, const std::string& what) const {
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_buffer* b, get(id, what));
  if (b->bytes < bytes) {
    return invalid_argument("qnn-htp execute: state " + what + " needs " + std::to_string(bytes) +
                            " bytes, got " + std::to_string(b->bytes));
  }
  return static_cast<uint8_t*>(b->data);
}

std::vector<int32_t> rope_permutation(const RopeTables& r) {
  std::vector<int32_t> perm(sz(r.d));
  for (int64_t i = 0; i < r.d; ++i) perm[sz(i)] = static_cast<int32_t>(i);
  const int64_t half = r.n_dims / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i0 = r.neox ? i : 2 * i;
    const int64_t i1 = r.neox ? i + half : 2 * i + 1;
    perm[sz(i0)] = static_cast<int32_t>(i1);
    perm[sz(i1)] = static_cast<int32_t>(i0);
  }
  return perm;
}

void fill_rope_tables(const RopeTables& r, std::span<const int32_t> pos, float* cos, float* sin) {
  const int64_t half = r.n_dims / 2;
  for (int64_t t = 0; t < r.tokens; ++t) {
    float* c = cos + t * r.d;
    float* s = sin + t * r.d;
    for (int64_t i = 0; i < r.d; ++i) {
      c[i] = 1.0f;
      s[i] = 0.0f;
    }
    for (int64_t i = 0; i < half; ++i) {
      double theta = static_cast<double>(pos[sz(t)]) * r.freq_scale *
                     std::pow(static_cast<double>(r.base),
                              -2.0 * static_cast<double>(i) / static_cast<double>(r.n_dims));
      if (!r.freq_factors.empty()) theta /= static_cast<double>(r.freq_factors[sz(i)]);
      const int64_t i0 = r.neox ? i : 2 * i;
      const int64_t i1 = r.neox ? i + half : 2 * i + 1;
      c[i0] = c[i1] = static_cast<float>(std::cos(theta));
      s[i0] = static_cast<float>(-std::sin(theta));  // y0 = x0 cos - x1 sin
      s[i1] = static_cast<float>(std::sin(theta));   // y1 = x1 cos + x0 sin
    }
  }
}

Status fill_attention_mask(const AttentionMask& m, std::span<const int32_t> q_pos,
                           std::span<const int32_t> k_pos, std::span<const int32_t> q_seg,
                           float* mask, float* any, std::vector<uint8_t>& seen) {
  seen.assign(sz(m.tk), 0);
  for (int64_t i = 0; i < m.tq; ++i) {
    int64_t begin = 0, end = m.tk;
    if (!q_seg.empty()) {
      begin = q_seg[sz(2 * i)];
      end = q_seg[sz(2 * i + 1)];
      if (begin < 0 || begin > end || end > m.tk) {
        return out_of_range("qnn-htp attention: query " + std::to_string(i) + " segment [" +
                            std::to_string(begin) + ", " + std::to_string(end) +
                            ") outside the key list of " + std::to_string(m.tk));
      }
    }
    bool some = false;
    for (int64_t j = 0; j < m.tk; ++j) {
      const int32_t kp = k_pos[sz(j)], qp = q_pos[sz(i)];
      bool visible = j >= begin && j < end && kp >= 0;
      if (visible && m.causal) visible = kp <= qp;
      if (visible && m.window > 0) visible = static_cast<int64_t>(qp) - kp < m.window;
      mask[i * m.tk + j] = visible ? 0.0f : kMasked;
      if (visible) seen[sz(j)] = 1;
      some = some || visible;
    }
    any[i] = some ? 1.0f : 0.0f;
  }
  return {};
}

Status gather_keys(const KeyGather& g, const uint8_t* state, std::span<const int32_t> k_rows,
                   std::span<const int32_t> slots, const std::vector<uint8_t>& seen, float* old,
                   float* sel) {
  for (int64_t j = 0; j < g.tk; ++j) {
    const int64_t row = k_rows.empty() ? j : k_rows[sz(j)];
    if (row < 0 || row >= g.rows) {
      return out_of_range("qnn-htp attention: key entry " + std::to_string(j) + " names row " +
                          std::to_string(row) + " of a state of " + std::to_string(g.rows));
    }
  }
  for (int64_t t = 0; t < g.tokens; ++t) {
    if (slots[sz(t)] < 0 || slots[sz(t)] >= g.rows) {
      return out_of_range("qnn-htp cache write: slot " + std::to_string(slots[sz(t)]) +
                          " of token " + std::to_string(t) + " outside a state of " +
                          std::to_string(g.rows) + " rows");
    }
  }
  if (g.tokens > 0) std::memset(sel, 0, sz(g.tk * g.tokens) * sizeof(float));
  for (int64_t j = 0; j < g.tk; ++j) {
    const int64_t row = k_rows.empty() ? j : k_rows[sz(j)];
    int64_t writer = -1;
    for (int64_t t = 0; t < g.tokens; ++t) {
      if (slots[sz(t)] == row) writer = t;  // the last write wins, as in CacheWrite
    }
    float* dst = old + j * g.row_elems;
    if (writer >= 0) sel[j * g.tokens + writer] = 1.0f;
    if (writer >= 0 || seen[sz(j)] == 0) {  // never read: it may hold anything (NaN)
      std::memset(dst, 0, sz(g.row_elems) * sizeof(float));
      continue;
    }
    if (g.type == GgmlType::kF32) {
      std::memcpy(dst, state + sz(row * g.row_elems) * 4, sz(g.row_elems) * 4);
    } else {
      const auto* h = reinterpret_cast<const uint16_t*>(state) + row * g.row_elems;
      for (int64_t e = 0; e < g.row_elems; ++e) dst[e] = fp16_to_fp32(h[e]);
    }
  }
  return {};
}

Status scatter_rows(const KeyGather& g, std::span<const int32_t> slots, const float* src,
                    uint8_t* state) {
  for (int64_t t = 0; t < g.tokens; ++t) {
    if (slots[sz(t)] < 0 || slots[sz(t)] >= g.rows) {
      return out_of_range("qnn-htp cache write: slot " + std::to_string(slots[sz(t)]) +
                          " of token " + std::to_string(t) + " outside a state of " +
                          std::to_string(g.rows) + " rows");
    }
  }
  for (int64_t t = 0; t < g.tokens; ++t) {
    const float* s = src + t * g.row_elems;
    const int64_t row = slots[sz(t)];
    if (g.type == GgmlType::kF32) {
      std::memcpy(state + sz(row * g.row_elems) * 4, s, sz(g.row_elems) * 4);
    } else {
      auto* h = reinterpret_cast<uint16_t*>(state) + row * g.row_elems;
      for (int64_t e = 0; e < g.row_elems; ++e) h[e] = fp32_to_fp16(s[e]);
    }
  }
  return {};
}

}  // namespace geniex::npu_qnn
