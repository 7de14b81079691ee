// Attention over F32 / F16 / Q8_0 / Q4_0 k and v with paging (k_rows, q_seg), causal / sliding-window masks,
// softcap and GQA. One work-group per (query head, query token): keys are scored WG at a time
// (one key per work-item, q in local memory), then an online softmax folds each chunk into
// per-thread output columns (work-item c owns columns c, c + WG, ...). f32, except that over a
// Q8_0 / Q4_0 K the query row is quantized to Q8_0 and each score is the reference's block dot
// (integer block sums, per-block float terms in order; ref_attention_quant.cpp).
#define ATT_DMAX 512
#define ATT_COLS ((ATT_DMAX + WG - 1) / WG)

// Element idx of a K / V tensor of type kt: 0 F32, 1 F16, 2 Q8_0, 3 Q4_0 (every head row is whole
// 32-element blocks, so element idx lives in block idx / 32).
inline float kv_load(global const uchar* p, int kt, size_t idx) {
  if (kt == 0) return ((global const float*)p)[idx];
  if (kt == 1) return vload_half(idx, (global const half*)p);
  const int j = (int)(idx % 32);
  if (kt == 2) {
    global const uchar* b = p + (idx / 32) * 34;
    return (float)((char)b[2 + j]) * ld_half(b);
  }
  global const uchar* b = p + (idx / 32) * 18;
  const int q = j < 16 ? (b[2 + j] & 0xF) : (b[2 + j - 16] >> 4);
  return ld_half(b) * (float)(q - 8);
}

// Q8_0 dot of K's head row at element `base` (kt 2 Q8_0, 3 Q4_0) with the quantized query
// (qq: quants, qd: binary16-rounded scales), as quant::vec_dot_ref: sum of sumi * d_k * d_q.
inline float kv_dot_q8(global const uchar* p, int kt, size_t base, int d, local const char* qq,
                       local const float* qd) {
  float sum = 0.0f;
  for (int blk = 0; blk < d / 32; ++blk) {
    const size_t bi = base / 32 + blk;
    int s = 0;
    float dk;
    if (kt == 2) {
      global const uchar* b = p + bi * 34;
      for (int j = 0; j < 32; ++j) s += (int)((char)b[2 + j]) * qq[32 * blk + j];
      dk = ld_half(b);
    } else {
      global const uchar* b = p + bi * 18;
      for (int j = 0; j < 16; ++j) {
        s += ((int)(b[2 + j] & 0xF) - 8) * qq[32 * blk + j] +
             ((int)(b[2 + j] >> 4) - 8) * qq[32 * blk + j + 16];
      }
      dk = ld_half(b);
    }
    sum += (float)s * dk * qd[blk];
  }
  return sum;
}

// The scaled (and soft-capped) score of key list entry j for query position qp; -INFINITY when
// the key is not visible.
inline float att_score(int j, int qp, global const int* k_pos, global const int* k_rows,
                       int has_rows, int causal, int window, global const uchar* k, int k_type,
                       int n_kv_head, int kvh, int d, local const float* qs, local const char* qq,
                       local const float* qd, float scale, float softcap) {
  const int kp = k_pos[j];
  if (kp < 0 || (causal && kp > qp) || (window > 0 && (long)qp - (long)kp >= (long)window)) {
    return -INFINITY;
  }
  const size_t row = (size_t)(has_rows ? k_rows[j] : j);
  const size_t base = (row * n_kv_head + kvh) * d;
  if (k_type >= 2) {  // the reference folds the cap into the scale: cap * tanh(dot * (scale / cap))
    const float s = kv_dot_q8(k, k_type, base, d, qq, qd) *
                    (softcap > 0.0f ? scale / softcap : scale);
    return softcap > 0.0f ? softcap * tanh(s) : s;
  }
  float dot = 0.0f;
  for (int i = 0; i < d; ++i) dot += qs[i] * kv_load(k, k_type, base + i);
  const float s = dot * scale;
  return softcap > 0.0f ? softcap * tanh(s / softcap) : s;
}

// binary16 rounding of v (round to nearest even) without half variables (no cl_khr_fp16).
inline float round_f16(float v) {
  ushort b;
  vstore_half_rte(v, 0, (private half*)&b);
  return vload_half(0, (private const half*)&b);
}

// With an F16 cache the CPU backend follows llama.cpp's non-flash path (backends/cpu/
// op_attention.cpp): q rounded to f16 before Q.K, and with an F16 V the probabilities
// p_j = exp(s_j - max) * (1 / sum) rounded to f16 before they weight V. Placement must not change
// results beyond noise, so F16 caches do the same here: a first pass over the keys finds the max
// and the sum (online), the second forms the rounded p. Other caches take one online pass.
kernel void attention_f32(global const float* q, global const uchar* k, global const uchar* v,
                          global const int* q_pos, global const int* k_pos,
                          global const int* k_rows, int has_rows, global const int* q_seg,
                          int has_seg, global float* out, int d, int dv, int n_kv_head, int n_kv,
                          int k_type, int v_type, float scale, int causal, int window,
                          float softcap) {
  local float qs[ATT_DMAX];
  local float sc[WG];
  local float red[WG];
  local wide wred[WG];
  local char qq[ATT_DMAX];
  local float qd[ATT_DMAX / 32];
  local ushort qh[ATT_DMAX / 32];  // binary16 bits
  const int h = get_group_id(0), t = get_group_id(1), lid = get_local_id(0);
  const int n_head = get_num_groups(0);
  const int kvh = h / (n_head / n_kv_head);
  global const float* qr = q + ((size_t)t * n_head + h) * d;
  for (int i = lid; i < d; i += WG) qs[i] = k_type == 1 ? round_f16(qr[i]) : qr[i];
  // quant::quantize_row(Q8_0) of the query row for a block K, one block per work-item. Barriers
  // stay out of branches on kernel arguments (PoCL 3.1 gave wrong results with one inside).
  barrier(CLK_LOCAL_MEM_FENCE);
  if (k_type >= 2) {
    for (int blk = lid; blk < d / 32; blk += WG) {
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = fmax(amax, fabs(qs[32 * blk + j]));
      const float dq = amax / 127.0f;
      const float id = dq == 0.0f ? 0.0f : 1.0f / dq;
      for (int j = 0; j < 32; ++j) qq[32 * blk + j] = np_cast_i8(round(qs[32 * blk + j] * id));
      vstore_half_rte(dq, blk, (local half*)qh);
      qd[blk] = vload_half(blk, (local const half*)qh);
    }
  }
  const int seg_b = has_seg ? q_seg[2 * t] : 0;
  const int seg_e = has_seg ? q_seg[2 * t + 1] : n_kv;
  const int qp = q_pos[t];
  const bool round_p = v_type == 1;
  float acc[ATT_COLS];
  for (int c = 0; c < ATT_COLS; ++c) acc[c] = 0.0f;
  float m_run = -INFINITY, s_run = 0.0f;
  // F16 V only (empty loops otherwise): pass 1a finds the max, pass 1b sums exp(s - max) in
  // wide, as the CPU (expf, double sum).
  for (int j0 = seg_b; j0 < (round_p ? seg_e : seg_b); j0 += WG) {
    const int j = j0 + lid;
    const float score = j < seg_e ? att_score(j, qp, k_pos, k_rows, has_rows, causal, window, k,
                                              k_type, n_kv_head, kvh, d, qs, qq, qd, scale, softcap)
                                  : -INFINITY;
    m_run = fmax(m_run, wg_max(score, red));
  }
  wide sum = 0;
  for (int j0 = seg_b; j0 < (round_p && m_run != -INFINITY ? seg_e : seg_b); j0 += WG) {
    const int j = j0 + lid;
    const float score = j < seg_e ? att_score(j, qp, k_pos, k_rows, has_rows, causal, window, k,
                                              k_type, n_kv_head, kvh, d, qs, qq, qd, scale, softcap)
                                  : -INFINITY;
    sum += wg_sum_w(score == -INFINITY ? (wide)0 : (wide)(float)exp((wide)(score - m_run)), wred);
  }
  if (round_p) s_run = sum > 0 ? (float)((wide)1.0 / sum) : 0.0f;
  const float inv = s_run;  // round_p: (float)(1 / sum)
  // Pass 2: p.v (online softmax unless the p are rounded).
  for (int j0 = seg_b; j0 < seg_e; j0 += WG) {
    barrier(CLK_LOCAL_MEM_FENCE);  // q loaded / the previous chunk's scores consumed
    const int j = j0 + lid;
    const float score = j < seg_e ? att_score(j, qp, k_pos, k_rows, has_rows, causal, window, k,
                                              k_type, n_kv_head, kvh, d, qs, qq, qd, scale, softcap)
                                  : -INFINITY;
    sc[lid] = score;
    const float m_chunk = wg_max(score, red);  // its barriers publish sc[]
    if (m_chunk == -INFINITY) continue;
    float m_new = m_run;
    if (!round_p) {
      m_new = fmax(m_run, m_chunk);
      const float corr = exp(m_run - m_new);
      s_run *= corr;
      for (int c = 0; c < ATT_COLS; ++c) acc[c] *= corr;
    }
    const int n_chunk = min(WG, seg_e - j0);
    for (int jj = 0; jj < n_chunk; ++jj) {
      const float s = sc[jj];
      if (s == -INFINITY) continue;
      float p;
      if (round_p) {
        p = round_f16((float)exp((wide)(s - m_new)) * inv);
      } else {
        p = exp(s - m_new);
        s_run += p;
      }
      const int jr = j0 + jj;
      const size_t row = (size_t)(has_rows ? k_rows[jr] : jr);
      const size_t base = (row * n_kv_head + kvh) * dv;
      for (int c = 0; c < ATT_COLS; ++c) {
        const int i = lid + c * WG;
        // fma when the p are rounded: the CPU's p.v accumulates per column in key order by fma.
        if (i < dv) {
          const float vv = kv_load(v, v_type, base + i);
          acc[c] = round_p ? fma(p, vv, acc[c]) : acc[c] + p * vv;
        }
      }
    }
    m_run = m_new;
  }
  global float* o = out + ((size_t)t * n_head + h) * dv;
  for (int c = 0; c < ATT_COLS; ++c) {
    const int i = lid + c * WG;
    if (i < dv) o[i] = round_p ? acc[c] : (s_run > 0.0f ? acc[c] / s_run : 0.0f);
  }
}
