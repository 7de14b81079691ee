// y[m, n] = sum_k W[n, k] * x[m, k]. One work-group per weight row n and tile of MT activation
// rows: the weight row is read once per tile, a local-memory tree reduction at the end (no
// subgroups, so it runs on any OpenCL 1.2 device). This file: F32 / F16 / BF16 weights (f32
// products and accumulation) and the embeddings; block weights are in matmul_q.cl.
#define MT 4

inline void mm_store(float* acc, local float* red, global float* y, int n, int N, int m0, int M) {
  const int lid = get_local_id(0);
  for (int i = 0; i < MT; ++i) red[i * WG + lid] = acc[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) {
      for (int i = 0; i < MT; ++i) red[i * WG + lid] += red[i * WG + lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    for (int i = 0; i < MT && m0 + i < M; ++i) y[(size_t)(m0 + i) * N + n] = red[i * WG];
  }
}

#define GENIEX_MM_ELEMS(NAME, LOAD)                                                             \
  kernel void NAME(global const uchar* w, ulong row_bytes, global const float* x,               \
                   global float* y, int K, int N, int M) {                                      \
    local float red[MT * WG];                                                                   \
    const int n = get_group_id(0), m0 = get_group_id(1) * MT, lid = get_local_id(0);            \
    global const uchar* row = w + (size_t)n * row_bytes;                                        \
    float acc[MT] = {0.0f, 0.0f, 0.0f, 0.0f};                                                   \
    for (int k = lid; k < K; k += WG) {                                                         \
      const float wv = LOAD(row, k);                                                            \
      for (int i = 0; i < MT && m0 + i < M; ++i) acc[i] += wv * x[(size_t)(m0 + i) * K + k];    \
    }                                                                                           \
    mm_store(acc, red, y, n, N, m0, M);                                                         \
  }

#define GENIEX_LOAD_F32(row, k) (((global const float*)(row))[k])
#define GENIEX_LOAD_F16(row, k) vload_half((k), (global const half*)(row))
#define GENIEX_LOAD_BF16(row, k) as_float((uint)(((global const ushort*)(row))[k]) << 16)
GENIEX_MM_ELEMS(matmul_f32, GENIEX_LOAD_F32)
GENIEX_MM_ELEMS(matmul_f16, GENIEX_LOAD_F16)
GENIEX_MM_ELEMS(matmul_bf16, GENIEX_LOAD_BF16)

// out[t, :] = dequantized row ids[t] of the table (ids checked on the host). One work-item per
// 32-element unit (block types) or per element (F32 / F16).
#define GENIEX_EMBED_BLOCKS(NAME, DEQ)                                                          \
  kernel void NAME(global const uchar* table, ulong row_bytes, global const int* ids,           \
                   global float* out, int E) {                                                  \
    const int u = get_global_id(0), t = get_global_id(1);                                       \
    float v[32];                                                                                \
    DEQ(table + (size_t)ids[t] * row_bytes, u, v);                                              \
    global float* o = out + (size_t)t * E + (size_t)u * 32;                                     \
    for (int j = 0; j < 32; ++j) o[j] = v[j];                                                   \
  }
GENIEX_EMBED_BLOCKS(embed_q4_0, deq_q4_0)
GENIEX_EMBED_BLOCKS(embed_q5_0, deq_q5_0)
GENIEX_EMBED_BLOCKS(embed_q8_0, deq_q8_0)
GENIEX_EMBED_BLOCKS(embed_q4_k, deq_q4_k)
GENIEX_EMBED_BLOCKS(embed_q6_k, deq_q6_k)
GENIEX_EMBED_BLOCKS(embed_q5_k, deq_q5_k)
GENIEX_EMBED_BLOCKS(embed_iq4_nl, deq_iq4_nl)

#define GENIEX_EMBED_ELEMS(NAME, LOAD)                                                          \
  kernel void NAME(global const uchar* table, ulong row_bytes, global const int* ids,           \
                   global float* out, int E) {                                                  \
    const int i = get_global_id(0), t = get_global_id(1);                                       \
    out[(size_t)t * E + i] = LOAD(table + (size_t)ids[t] * row_bytes, i);                       \
  }
GENIEX_EMBED_ELEMS(embed_f32, GENIEX_LOAD_F32)
GENIEX_EMBED_ELEMS(embed_f16, GENIEX_LOAD_F16)
GENIEX_EMBED_ELEMS(embed_bf16, GENIEX_LOAD_BF16)
