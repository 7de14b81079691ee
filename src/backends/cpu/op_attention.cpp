// Attention on the CPU over an F32 or F16 KV cache.
//
// Numerics follow ggml's non-flash CPU path (what llama.cpp runs by default without flash
// attention), so that greedy outputs track llama.cpp's: with an F16 cache the query is rounded
// to f16 before Q.K, scores are scaled (and soft-capped) in f32, softmax sums in double, and the
// probabilities are rounded to f16 before they weight V. With an F32 cache nothing is rounded.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/cpu_ops.h"
#include "core/fp16.h"
#include "graph/ref_ops.h"

namespace geniex::backends::cpu {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

// Eight independent partial sums let the compiler vectorize without reassociating.
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// Converts `rows` rows of `n` elements to f32 (a copy for F32).
void to_f32(const KvView& src, int64_t rows, int64_t n, float* dst, ThreadPool& pool) {
  if (src.type == GgmlType::kF32) {
    std::memcpy(dst, src.data, sz(rows * n) * sizeof(float));
    return;
  }
  constexpr int64_t kRowsPerTask = 64;
  const auto* h = reinterpret_cast<const uint16_t*>(src.data);
  pool.parallel_for((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task, int) {
    const int64_t r0 = task * kRowsPerTask, r1 = std::min(rows, r0 + kRowsPerTask);
    for (int64_t i = r0 * n; i < r1 * n; ++i) dst[i] = fp16_to_fp32(h[i]);
  });
}

}  // namespace

Status attention(ThreadPool& pool, Scratch& scratch, const float* q, KvView k, KvView v,
                 int64_t head_dim, int64_t head_dim_v, int64_t n_head, int64_t n_kv_head,
                 int64_t n_q, int64_t n_kv, std::span<const int32_t> q_pos,
                 std::span<const int32_t> k_pos, const graph::AttentionParams& params, float* out) {
  if (n_kv_head <= 0 || n_head % n_kv_head != 0) {
    return invalid_argument("attention: n_head must be a multiple of n_kv_head");
  }
  if (static_cast<int64_t>(q_pos.size()) != n_q || static_cast<int64_t>(k_pos.size()) != n_kv) {
    return invalid_argument("attention: position arrays do not match n_q / n_kv");
  }
  const bool round_f16 = k.type == GgmlType::kF16;
  const bool round_p = v.type == GgmlType::kF16;
  // f32 copies of K and V ([n_kv, n_kv_head, d] like the cache), shared by all threads.
  const int nt = pool.size();
  scratch.per_thread.resize(sz(nt) + 2);
  auto& kf = scratch.per_thread[sz(nt)];
  auto& vf = scratch.per_thread[sz(nt) + 1];
  kf.resize(sz(n_kv * n_kv_head * head_dim));
  vf.resize(sz(n_kv * n_kv_head * head_dim_v));
  to_f32(k, n_kv * n_kv_head, head_dim, kf.data(), pool);
  to_f32(v, n_kv * n_kv_head, head_dim_v, vf.data(), pool);
  for (int i = 0; i < nt; ++i) scratch.per_thread[sz(i)].resize(sz(n_kv + head_dim + head_dim_v));

  const int64_t group = n_head / n_kv_head;
  constexpr int64_t kQueriesPerTask = 4;
  const int64_t q_tasks = (n_q + kQueriesPerTask - 1) / kQueriesPerTask;
  const float ninf = -std::numeric_limits<float>::infinity();
  pool.parallel_for(n_head * q_tasks, [&](int64_t task, int thread) {
    const int64_t h = task % n_head;
    const int64_t kvh = h / group;
    float* s = scratch.per_thread[sz(thread)].data();
    float* qr = s + n_kv;
    float* acc = qr + head_dim;
    const int64_t t0 = (task / n_head) * kQueriesPerTask;
    const int64_t t1 = std::min(n_q, t0 + kQueriesPerTask);
    for (int64_t t = t0; t < t1; ++t) {
      const float* qsrc = q + (t * n_head + h) * head_dim;
      for (int64_t i = 0; i < head_dim; ++i) {
        qr[i] = round_f16 ? fp16_to_fp32(fp32_to_fp16(qsrc[i])) : qsrc[i];
      }
      float mx = ninf;
      for (int64_t j = 0; j < n_kv; ++j) {
        if (!graph::ref::attention_visible(q_pos[sz(t)], k_pos[sz(j)], params)) {
          s[j] = ninf;
          continue;
        }
        float score = dot(qr, kf.data() + (j * n_kv_head + kvh) * head_dim, head_dim);
        if (params.softcap > 0.0f) {
          score = params.softcap * std::tanh(score * params.scale / params.softcap);
        } else {
          score *= params.scale;
        }
        s[j] = score;
        mx = std::max(mx, score);
      }
      float* o = out + (t * n_head + h) * head_dim_v;
      if (mx == ninf) {  // no visible key: zeros, like the reference
        std::fill(o, o + head_dim_v, 0.0f);
        continue;
      }
      double sum = 0.0;
      for (int64_t j = 0; j < n_kv; ++j) {
        const float e = s[j] == ninf ? 0.0f : std::exp(s[j] - mx);
        s[j] = e;
        sum += e;
      }
      const auto inv = static_cast<float>(1.0 / sum);
      std::fill(acc, acc + head_dim_v, 0.0f);
      for (int64_t j = 0; j < n_kv; ++j) {
        if (s[j] == 0.0f) continue;
        float p = s[j] * inv;
        if (round_p) p = fp16_to_fp32(fp32_to_fp16(p));
        const float* vr = vf.data() + (j * n_kv_head + kvh) * head_dim_v;
        for (int64_t i = 0; i < head_dim_v; ++i) acc[i] += p * vr[i];
      }
      std::copy(acc, acc + head_dim_v, o);
    }
  });
  return {};
}

}  // namespace geniex::backends::cpu
