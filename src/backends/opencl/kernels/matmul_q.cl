// MatMul with block-quantized weights, following the reference (graph README "MatMul follows
// ggml"): each activation row is first quantized to the weight's vec-dot type (Q8_0 for the
// 32-element formats, Q8_K for the K-quants) by quantize_*_rows, exactly as quant::quantize_row
// does; the dot kernels then form the reference's integer block sums and combine them per block
// with the reference's float expression (quant/dot_ref*.cpp). Only the order in which the
// per-block terms are added differs (a work-group tree instead of left to right).
//
// Quantized activation rows live in one buffer: int8 quants [M][K] at offset 0, then the scales
// at byte offset d_off (Q8_0: binary16 [M][K/32]; Q8_K: float [M][K/256]), then for Q8_K the
// 16-element sums at byte offset bs_off (short [M][K/16]).

// numpy's float32 -> int8 cast of quantize_q8_0 (through int64, low byte; NaN / out of range 0).
inline char np_cast_i8(float v) {
  if (!(v >= -9223372036854775808.0f && v < 9223372036854775808.0f)) return 0;
  return as_char((uchar)((ulong)(long)v & 0xFFul));
}

// One work-item per 32-element block (global: K/32, M): d = max|x| / 127, q = round(x / d)
// (half away from zero), d stored as binary16 (round to nearest even).
kernel void quantize_q8_0_rows(global const float* x, global uchar* out, ulong d_off, int K) {
  const int b = get_global_id(0), m = get_global_id(1);
  const int nb = K / 32;
  global const float* xb = x + (size_t)m * K + (size_t)b * 32;
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = fmax(amax, fabs(xb[j]));
  const float d = amax / 127.0f;
  const float id = d == 0.0f ? 0.0f : 1.0f / d;
  global char* q = (global char*)out + (size_t)m * K + (size_t)b * 32;
  for (int j = 0; j < 32; ++j) q[j] = np_cast_i8(round(xb[j] * id));
  vstore_half_rte(d, (size_t)m * nb + b, (global half*)(out + d_off));
}

// One work-item per 256-element block (global: K/256, M): llama.cpp's Q8_K reference scheme
// (iscale = -127 / the signed value of the first largest |x|, round to nearest even, clamp to
// [-128, 127], d = 1 / iscale, sums of each 16 quants).
kernel void quantize_q8_k_rows(global const float* x, global uchar* out, ulong d_off,
                               ulong bs_off, int K) {
  const int b = get_global_id(0), m = get_global_id(1);
  const int nb = K / 256;
  global const float* xb = x + (size_t)m * K + (size_t)b * 256;
  global char* q = (global char*)out + (size_t)m * K + (size_t)b * 256;
  global float* dd = (global float*)(out + d_off) + (size_t)m * nb + b;
  global short* bs = (global short*)(out + bs_off) + ((size_t)m * nb + b) * 16;
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 256; ++j) {
    const float a = fabs(xb[j]);
    if (a > amax) {
      amax = a;
      max = xb[j];
    }
  }
  if (amax == 0.0f) {
    for (int j = 0; j < 256; ++j) q[j] = 0;
    for (int g = 0; g < 16; ++g) bs[g] = 0;
    *dd = 0.0f;
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < 256; ++j) {
    const float v = iscale * xb[j];
    const int r = (v == v) ? (int)rint(clamp(v, -1048576.0f, 1048576.0f)) : 0;
    q[j] = (char)clamp(r, -128, 127);
  }
  for (int g = 0; g < 16; ++g) {
    int s = 0;
    for (int j = 0; j < 16; ++j) s += q[16 * g + j];
    bs[g] = (short)s;
  }
  *dd = 1.0f / iscale;
}

// Integer quants of block u of a 32-element-format weight row into q[32]; returns the scale.
inline float unq_q4_0(global const uchar* row, int u, int* q) {
  global const uchar* b = row + (size_t)u * 18;
  for (int j = 0; j < 16; ++j) {
    q[j] = (int)(b[2 + j] & 0xF) - 8;
    q[j + 16] = (int)(b[2 + j] >> 4) - 8;
  }
  return ld_half(b);
}

inline float unq_q5_0(global const uchar* row, int u, int* q) {
  global const uchar* b = row + (size_t)u * 22;
  const uint h = (uint)b[2] | ((uint)b[3] << 8) | ((uint)b[4] << 16) | ((uint)b[5] << 24);
  for (int j = 0; j < 16; ++j) {
    q[j] = ((int)(b[6 + j] & 0xF) | (int)(((h >> j) & 1u) << 4)) - 16;
    q[j + 16] = ((int)(b[6 + j] >> 4) | (int)(((h >> (j + 16)) & 1u) << 4)) - 16;
  }
  return ld_half(b);
}

inline float unq_q8_0(global const uchar* row, int u, int* q) {
  global const uchar* b = row + (size_t)u * 34;
  for (int j = 0; j < 32; ++j) q[j] = (char)b[2 + j];
  return ld_half(b);
}

inline float unq_iq4_nl(global const uchar* row, int u, int* q) {
  global const uchar* b = row + (size_t)u * 18;
  for (int j = 0; j < 16; ++j) {
    q[j] = kIq4nlValues[b[2 + j] & 0xF];
    q[j + 16] = kIq4nlValues[b[2 + j] >> 4];
  }
  return ld_half(b);
}

// The per-block float terms of dot_ref.cpp (FP_CONTRACT OFF keeps them unfused).
#define GENIEX_TERM_SDD(s, dw, da) ((float)(s) * (dw) * (da))
#define GENIEX_TERM_DDS(s, dw, da) ((dw) * (da) * (float)(s))

// y[m, n] = sum over blocks of TERM(integer block dot, weight scale, activation scale).
#define GENIEX_MMQ_32(NAME, UNQ, TERM)                                                          \
  kernel void NAME(global const uchar* w, ulong row_bytes, global const uchar* aq, ulong d_off, \
                   global float* y, int K, int N, int M) {                                      \
    local float red[MT * WG];                                                                   \
    const int n = get_group_id(0), m0 = get_group_id(1) * MT, lid = get_local_id(0);            \
    const int nb = K / 32;                                                                      \
    global const uchar* row = w + (size_t)n * row_bytes;                                        \
    global const half* da = (global const half*)(aq + d_off);                                   \
    float acc[MT] = {0.0f, 0.0f, 0.0f, 0.0f};                                                   \
    int q[32];                                                                                  \
    for (int u = lid; u < nb; u += WG) {                                                        \
      const float dw = UNQ(row, u, q);                                                          \
      for (int i = 0; i < MT && m0 + i < M; ++i) {                                              \
        global const char* a = (global const char*)aq + (size_t)(m0 + i) * K + (size_t)u * 32; \
        int s = 0;                                                                              \
        for (int j = 0; j < 32; ++j) s += q[j] * a[j];                                          \
        acc[i] += TERM(s, dw, vload_half((size_t)(m0 + i) * nb + u, da));                       \
      }                                                                                         \
    }                                                                                           \
    mm_store(acc, red, y, n, N, m0, M);                                                         \
  }

GENIEX_MMQ_32(matmul_q4_0, unq_q4_0, GENIEX_TERM_SDD)
GENIEX_MMQ_32(matmul_q5_0, unq_q5_0, GENIEX_TERM_SDD)
GENIEX_MMQ_32(matmul_q8_0, unq_q8_0, GENIEX_TERM_SDD)
GENIEX_MMQ_32(matmul_iq4_nl, unq_iq4_nl, GENIEX_TERM_DDS)

// K-quants: the integer sums of the 8 sub-blocks (32 elements each) of one super-block are
// formed by LANES work-items, added in local memory (exact), and the lane-0 work-item adds the
// super-block's float term. Sub-block s of a Q4_K / Q5_K block: *ps = scale * (q . a) and
// *pm = min * (bsum[2s] + bsum[2s+1]); Q6_K: two 16-element scales, no min.
#define LANES (WG < 8 ? WG : 8)
#define SB_PER_IT (WG / LANES)

inline void sub_q45_k(global const uchar* b, int s, int has_hi, global const char* a,
                      global const short* bs, int* ps, int* pm) {
  int sc, mn;
  scale_min_k4(s, b + 4, &sc, &mn);
  global const uchar* qs = b + (has_hi ? 48 : 16) + 32 * (s / 2);
  global const uchar* qh = b + 16;
  const int sh = 4 * (s % 2);
  int dot = 0;
  for (int l = 0; l < 32; ++l) {
    int v = (qs[l] >> sh) & 0xF;
    if (has_hi) v |= ((qh[l] >> s) & 1) << 4;
    dot += v * a[32 * s + l];
  }
  *ps += sc * dot;
  *pm += mn * ((int)bs[2 * s] + (int)bs[2 * s + 1]);
}

inline void sub_q6_k(global const uchar* b, int s, global const char* a, int* ps) {
  const int n = s / 4, r = s % 4;
  global const uchar* ql = b + 64 * n + (r & 1) * 32;
  global const uchar* qh = b + 128 + 32 * n;
  global const char* scales = (global const char*)(b + 192);
  int dot0 = 0, dot1 = 0;
  for (int l = 0; l < 32; ++l) {
    const int low = r < 2 ? (ql[l] & 0xF) : (ql[l] >> 4);
    const int high = (qh[l] >> (2 * r)) & 3;
    const int v = ((low | (high << 4)) - 32) * a[32 * s + l];
    if (l < 16) {
      dot0 += v;
    } else {
      dot1 += v;
    }
  }
  *ps += (int)scales[8 * n + 2 * r] * dot0 + (int)scales[8 * n + 2 * r + 1] * dot1;
}

// KIND: 0 Q4_K, 1 Q5_K, 2 Q6_K.
inline void mmq_k(global const uchar* w, ulong row_bytes, global const uchar* aq, ulong d_off,
                  ulong bs_off, global float* y, int K, int N, int M, int kind, int block_bytes,
                  local float* red, local int* isum, local int* imin) {
  const int n = get_group_id(0), m0 = get_group_id(1) * MT, lid = get_local_id(0);
  const int nsb = K / 256;
  const int lane = lid % LANES;
  global const uchar* row = w + (size_t)n * row_bytes;
  global const float* da = (global const float*)(aq + d_off);
  global const short* bsa = (global const short*)(aq + bs_off);
  float acc[MT] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int sb0 = 0; sb0 < nsb; sb0 += SB_PER_IT) {
    const int sb = sb0 + lid / LANES;
    int ps[MT] = {0, 0, 0, 0}, pm[MT] = {0, 0, 0, 0};
    if (sb < nsb) {
      global const uchar* b = row + (size_t)sb * block_bytes;
      for (int i = 0; i < MT && m0 + i < M; ++i) {
        global const char* a = (global const char*)aq + (size_t)(m0 + i) * K + (size_t)sb * 256;
        global const short* bs = bsa + ((size_t)(m0 + i) * nsb + sb) * 16;
        for (int s = lane; s < 8; s += LANES) {
          if (kind == 2) {
            sub_q6_k(b, s, a, &ps[i]);
          } else {
            sub_q45_k(b, s, kind, a, bs, &ps[i], &pm[i]);
          }
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < MT; ++i) {
      isum[i * WG + lid] = ps[i];
      imin[i * WG + lid] = pm[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (sb < nsb && lane == 0) {
      global const uchar* b = row + (size_t)sb * block_bytes;
      const float dw = ld_half(b + (kind == 2 ? 208 : 0));
      const float dmin = kind == 2 ? 0.0f : ld_half(b + 2);
      for (int i = 0; i < MT && m0 + i < M; ++i) {
        int s = 0, mn = 0;
        for (int t = 0; t < LANES; ++t) {
          s += isum[i * WG + lid + t];
          mn += imin[i * WG + lid + t];
        }
        const float dy = da[(size_t)(m0 + i) * nsb + sb];
        if (kind == 2) {
          acc[i] += dw * dy * (float)s;
        } else {
          acc[i] += dw * dy * (float)s - dmin * dy * (float)mn;
        }
      }
    }
  }
  mm_store(acc, red, y, n, N, m0, M);
}

#define GENIEX_MMQ_K(NAME, KIND, BYTES)                                                         \
  kernel void NAME(global const uchar* w, ulong row_bytes, global const uchar* aq, ulong d_off, \
                   ulong bs_off, global float* y, int K, int N, int M) {                        \
    local float red[MT * WG];                                                                   \
    local int isum[MT * WG];                                                                    \
    local int imin[MT * WG];                                                                    \
    mmq_k(w, row_bytes, aq, d_off, bs_off, y, K, N, M, KIND, BYTES, red, isum, imin);           \
  }

GENIEX_MMQ_K(matmul_q4_k, 0, 144)
GENIEX_MMQ_K(matmul_q5_k, 1, 176)
GENIEX_MMQ_K(matmul_q6_k, 2, 210)
