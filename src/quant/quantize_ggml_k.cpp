// llama.cpp's K-quant quantizers: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, both the round-to-nearest
// reference (quantize_row_*_ref: what llama-quantize runs without an importance matrix) and the
// importance-weighted variant (quantize_row_*_impl with quant_weights). Same searches, same
// float operations, same packing: byte-identical blocks (tests/python/test_quantize_cli.py).
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/ggml_search.h"
#include "quant/ggml_search_lanes.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {
namespace {

inline float fl(int v) { return static_cast<float>(v); }
inline uint8_t u8(int v) { return static_cast<uint8_t>(v); }

// Packs 2-bit levels (Q2_K, Q3_K low bits): four 32-element groups per 128 into one byte.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] =
          u8(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// Q2_K: requantizes every element against the stored 4-bit scale and min.
void q2k_requantize(const float* x, const BlockQ2_K& y, uint8_t* L) {
  for (int j = 0; j < kQK_K / 16; ++j) {
    const float d = fp16_to_fp32(y.d) * fl(y.scales[j] & 0xF);
    if (d == 0.0f) continue;
    const float dm = fp16_to_fp32(y.dmin) * fl(y.scales[j] >> 4);
    for (int ii = 0; ii < 16; ++ii) {
      int l = ggml_nearest_int((x[16 * j + ii] + dm) / d);
      l = imax(0, imin(3, l));
      L[16 * j + ii] = u8(l);
    }
  }
}

void q2k_block_ref(const float* x, BlockQ2_K& y) {
  uint8_t L[kQK_K];
  uint8_t Laux[16];
  float weights[16];
  float mins[kQK_K / 16];
  float scales[kQK_K / 16];
  const float q4scale = 15.f;
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < kQK_K / 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                 0.1f, 15, true);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  if (max_scale > 0) {
    const float iscale = q4scale / max_scale;
    for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = u8(ggml_nearest_int(iscale * scales[j]));
    y.d = fp32_to_fp16(max_scale / q4scale);
  } else {
    for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = 0;
    y.d = fp32_to_fp16(0.f);
  }
  if (max_min > 0) {
    const float iscale = q4scale / max_min;
    for (int j = 0; j < kQK_K / 16; ++j) {
      const int l = ggml_nearest_int(iscale * mins[j]);
      y.scales[j] = u8(y.scales[j] | (l << 4));
    }
    y.dmin = fp32_to_fp16(max_min / q4scale);
  } else {
    y.dmin = fp32_to_fp16(0.f);
  }
  q2k_requantize(x, y, L);
  pack_2bit(L, y.qs);
}

void q2k_block_weighted(const float* x, BlockQ2_K& y, const float* quant_weights) {
  uint8_t L[kQK_K];
  uint8_t Laux[16];
  float mins[kQK_K / 16];
  float scales[kQK_K / 16];
  float sw[kQK_K / 16] = {};
  float weight[16];
  uint8_t Ls[kQK_K / 16];
  uint8_t Lm[kQK_K / 16];
  float sumx2 = 0;
  for (int j = 0; j < kQK_K; ++j) sumx2 += x[j] * x[j];
  const float sigma2 = sumx2 / fl(kQK_K);
  for (int j = 0; j < kQK_K / 16; ++j) {
    const float* qw = quant_weights + 16 * j;
    for (int l = 0; l < 16; ++l) {
      weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
    }
    for (int l = 0; l < kQK_K / 16; ++l) sw[j] += weight[l];
    scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f,
                                 0.05f, 36, false);
  }
  const float dm = make_qp_quants(kQK_K / 16, 15, scales, Ls, sw);
  const float mm = make_qp_quants(kQK_K / 16, 15, mins, Lm, sw);
  y.d = fp32_to_fp16(dm);
  y.dmin = fp32_to_fp16(mm);
  for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = u8(Ls[j] | (Lm[j] << 4));
  q2k_requantize(x, y, L);
  pack_2bit(L, y.qs);
}

// Q3_K: 6-bit signed sub-block scales packed into 12 bytes.
void q3k_store_scale(BlockQ3_K& y, int j, int l) {
  if (j < 8) {
    y.scales[j] = u8(l & 0xF);
  } else {
    y.scales[j - 8] = u8(y.scales[j - 8] | ((l & 0xF) << 4));
  }
  l >>= 4;
  y.scales[j % 4 + 8] = u8(y.scales[j % 4 + 8] | (l << (2 * (j / 4))));
}

void q3k_finish(const float* x, BlockQ3_K& y, int8_t* L) {
  for (int j = 0; j < kQK_K / 16; ++j) {
    auto sc = static_cast<int8_t>(j < 8 ? y.scales[j] & 0xF : y.scales[j - 8] >> 4);
    sc = static_cast<int8_t>((sc | (((y.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
    const float d = fp16_to_fp32(y.d) * fl(sc);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = ggml_nearest_int(x[16 * j + ii] / d);
      l = imax(-4, imin(3, l));
      L[16 * j + ii] = static_cast<int8_t>(l + 4);
    }
  }
  std::memset(y.hmask, 0, kQK_K / 8);
  int m = 0;
  uint8_t hm = 1;
  for (int j = 0; j < kQK_K; ++j) {
    if (L[j] > 3) {
      y.hmask[m] = u8(y.hmask[m] | hm);
      L[j] = static_cast<int8_t>(L[j] - 4);
    }
    if (++m == kQK_K / 8) {
      m = 0;
      hm = u8(hm << 1);
    }
  }
  uint8_t Lu[kQK_K];
  for (int j = 0; j < kQK_K; ++j) Lu[j] = static_cast<uint8_t>(L[j]);
  pack_2bit(Lu, y.qs);
}

void q3k_block_ref(const float* x, BlockQ3_K& y) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  float max_scale = 0;
  float amax = 0;
  for (int j = 0; j < kQK_K / 16; ++j) {
    scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }
  std::memset(y.scales, 0, 12);
  if (max_scale != 0.0f) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < kQK_K / 16; ++j) {
      auto l = static_cast<int8_t>(ggml_nearest_int(iscale * scales[j]));
      l = static_cast<int8_t>(imax(-32, imin(31, l)) + 32);
      q3k_store_scale(y, j, l);
    }
    y.d = fp32_to_fp16(1 / iscale);
  } else {
    y.d = fp32_to_fp16(0.f);
  }
  q3k_finish(x, y, L);
}

void q3k_block_weighted(const float* x, BlockQ3_K& y, const float* quant_weights) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  float weight[16];
  float sw[kQK_K / 16];
  int8_t Ls[kQK_K / 16];
  float sumx2 = 0;
  for (int j = 0; j < kQK_K; ++j) sumx2 += x[j] * x[j];
  const float sigma2 = 2 * sumx2 / fl(kQK_K);
  for (int j = 0; j < kQK_K / 16; ++j) {
    if (quant_weights) {
      const float* qw = quant_weights + 16 * j;
      for (int l = 0; l < 16; ++l) {
        weight[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
      }
    } else {
      for (int l = 0; l < 16; ++l) weight[l] = x[16 * j + l] * x[16 * j + l];
    }
    float sumw = 0;
    for (int l = 0; l < 16; ++l) sumw += weight[l];
    sw[j] = sumw;
    scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
  }
  std::memset(y.scales, 0, 12);
  const float d_block = make_qx_quants(kQK_K / 16, 32, scales, Ls, 1, sw);
  for (int j = 0; j < kQK_K / 16; ++j) q3k_store_scale(y, j, Ls[j]);
  y.d = fp32_to_fp16(d_block);
  q3k_finish(x, y, L);
}

// Q4_K / Q5_K: 6-bit scale and min per 32 elements packed into 12 bytes.
void k4_store_scales(uint8_t* scales, int j, uint8_t ls, uint8_t lm) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = u8((ls & 0xF) | ((lm & 0xF) << 4));
    scales[j - 4] = u8(scales[j - 4] | ((ls >> 4) << 6));
    scales[j - 0] = u8(scales[j - 0] | ((lm >> 4) << 6));
  }
}

// Requantizes against the stored 6-bit scales/mins: levels in [0, nmax].
void k4_requantize(const float* x, const uint8_t* scales, uint16_t d16, uint16_t dmin16, int nmax,
                   uint8_t* L) {
  uint8_t sc = 0;
  uint8_t m = 0;
  for (int j = 0; j < kQK_K / 32; ++j) {
    get_scale_min_k4(j, scales, &sc, &m);
    const float d = fp16_to_fp32(d16) * fl(sc);
    if (d == 0.0f) continue;
    const float dm = fp16_to_fp32(dmin16) * fl(m);
    for (int ii = 0; ii < 32; ++ii) {
      int l = ggml_nearest_int((x[32 * j + ii] + dm) / d);
      l = imax(0, imin(nmax, l));
      L[32 * j + ii] = u8(l);
    }
  }
}

// The reference scale/min search shared by Q4_K (nmax 15) and Q5_K (nmax 31).
void k45_ref_scales(const float* x, int nmax, float rmin, int nstep, uint8_t* L,
                    uint8_t* scales_out, uint16_t* d_out, uint16_t* dmin_out) {
  float mins[kQK_K / 32];
  float scales[kQK_K / 32];
  float max_scale = 0;
  float max_min = 0;
  float all_weights[kQK_K];
  for (int j = 0; j < kQK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) all_weights[32 * j + l] = av_x + std::fabs(x[32 * j + l]);
  }
  // The eight sub-block searches side by side (bit-identical to make_qkx2_quants each).
  make_qkx2_quants_x8(32, nmax, x, all_weights, L, mins, scales, rmin, 0.1f, nstep);
  for (int j = 0; j < kQK_K / 32; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQK_K / 32; ++j) {
    auto ls = u8(ggml_nearest_int(inv_scale * scales[j]));
    auto lm = u8(ggml_nearest_int(inv_min * mins[j]));
    ls = u8(imin(63, ls));
    lm = u8(imin(63, lm));
    k4_store_scales(scales_out, j, ls, lm);
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
}

// The importance-weighted search shared by Q4_K and Q5_K.
void k45_weighted_scales(const float* x, int nmax, const float* quant_weights, uint8_t* L,
                         uint8_t* scales_out, uint16_t* d_out, uint16_t* dmin_out) {
  uint8_t Laux[32];
  uint8_t Ls[kQK_K / 32];
  uint8_t Lm[kQK_K / 32];
  float weights[32];
  float sw[kQK_K / 32];
  float mins[kQK_K / 32];
  float scales[kQK_K / 32];
  float sum_x2 = 0;
  for (int l = 0; l < kQK_K; ++l) sum_x2 += x[l] * x[l];
  const float sigma2 = 2 * sum_x2 / fl(kQK_K);
  const float av_x = std::sqrt(sigma2);
  for (int j = 0; j < kQK_K / 32; ++j) {
    if (quant_weights) {
      const float* qw = quant_weights + 32 * j;
      for (int l = 0; l < 32; ++l) {
        weights[l] = qw[l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
      }
    } else {
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    }
    float sumw = 0;
    for (int l = 0; l < 32; ++l) sumw += weights[l];
    sw[j] = sumw;
    scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f,
                                 0.05f, 36, false);
  }
  const float d_block = make_qp_quants(kQK_K / 32, 63, scales, Ls, sw);
  const float m_block = make_qp_quants(kQK_K / 32, 63, mins, Lm, sw);
  for (int j = 0; j < kQK_K / 32; ++j) {
    k4_store_scales(scales_out, j, u8(imin(63, Ls[j])), u8(imin(63, Lm[j])));
  }
  *d_out = fp32_to_fp16(d_block);
  *dmin_out = fp32_to_fp16(m_block);
}

void q4k_pack(const uint8_t* L, uint8_t* q) {
  for (int j = 0; j < kQK_K; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = u8(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

void q5k_pack(const uint8_t* L, uint8_t* qh, uint8_t* ql) {
  std::memset(qh, 0, kQK_K / 8);
  uint8_t m1 = 1;
  uint8_t m2 = 2;
  for (int n = 0; n < kQK_K; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] = u8(qh[j] | m1);
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        qh[j] = u8(qh[j] | m2);
      }
      ql[j] = u8(l1 | (l2 << 4));
    }
    m1 = u8(m1 << 2);
    m2 = u8(m2 << 2);
    ql += 32;
  }
}

// Q6_K: signed 8-bit sub-block scales; `qw` null means x^2 weights.
void q6k_block(const float* x, BlockQ6_K& y, const float* quant_weights) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  float max_scale = 0;
  float max_abs_scale = 0;
  if (quant_weights == nullptr) make_qx_quants_x16(32, x, L, scales);
  for (int ib = 0; ib < kQK_K / 16; ++ib) {
    if (quant_weights != nullptr) {
      scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, quant_weights + 16 * ib);
    }
    const float scale = scales[ib];
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(&y, 0, sizeof(y));
    y.d = fp32_to_fp16(0.f);
    return;
  }
  const float iscale = -128.f / max_scale;
  y.d = fp32_to_fp16(1 / iscale);
  for (int ib = 0; ib < kQK_K / 16; ++ib) {
    y.scales[ib] = static_cast<int8_t>(imin(127, ggml_nearest_int(iscale * scales[ib])));
  }
  for (int j = 0; j < kQK_K / 16; ++j) {
    const float d = fp16_to_fp32(y.d) * fl(y.scales[j]);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = ggml_nearest_int(x[16 * j + ii] / d);
      l = imax(-32, imin(31, l));
      L[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  uint8_t* ql = y.ql;
  uint8_t* qh = y.qh;
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l + 0] & 0xF;
      const int q2 = L[j + l + 32] & 0xF;
      const int q3 = L[j + l + 64] & 0xF;
      const int q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = u8(q1 | (q3 << 4));
      ql[l + 32] = u8(q2 | (q4 << 4));
      qh[l] = u8((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                 ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

template <typename B, typename F>
void for_blocks(const float* src, uint8_t* dst, size_t nb, F&& f) {
  for (size_t i = 0; i < nb; ++i) {
    B y{};
    f(src + i * kQK_K, y, i);
    store_block(dst, i, y);
  }
}

}  // namespace

void quantize_q2_k(const float* src, uint8_t* dst, size_t nb) {
  for_blocks<BlockQ2_K>(src, dst, nb,
                        [](const float* x, BlockQ2_K& y, size_t) { q2k_block_ref(x, y); });
}

void quantize_q3_k(const float* src, uint8_t* dst, size_t nb) {
  for_blocks<BlockQ3_K>(src, dst, nb,
                        [](const float* x, BlockQ3_K& y, size_t) { q3k_block_ref(x, y); });
}

void quantize_q4_k(const float* src, uint8_t* dst, size_t nb) {
  for_blocks<BlockQ4_K>(src, dst, nb, [](const float* x, BlockQ4_K& y, size_t) {
    uint8_t L[kQK_K];
    k45_ref_scales(x, 15, -1.f, 20, L, y.scales, &y.d, &y.dmin);
    k4_requantize(x, y.scales, y.d, y.dmin, 15, L);
    q4k_pack(L, y.qs);
  });
}

void quantize_q5_k(const float* src, uint8_t* dst, size_t nb) {
  for_blocks<BlockQ5_K>(src, dst, nb, [](const float* x, BlockQ5_K& y, size_t) {
    uint8_t L[kQK_K];
    k45_ref_scales(x, 31, -0.5f, 15, L, y.scales, &y.d, &y.dmin);
    k4_requantize(x, y.scales, y.d, y.dmin, 31, L);
    q5k_pack(L, y.qh, y.qs);
  });
}

void quantize_q6_k(const float* src, uint8_t* dst, size_t nb) {
  for_blocks<BlockQ6_K>(src, dst, nb,
                        [](const float* x, BlockQ6_K& y, size_t) { q6k_block(x, y, nullptr); });
}

void quantize_q2_k_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  for_blocks<BlockQ2_K>(src, dst, n / kQK_K, [qw](const float* x, BlockQ2_K& y, size_t i) {
    q2k_block_weighted(x, y, qw + kQK_K * i);
  });
}

void quantize_q3_k_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  for_blocks<BlockQ3_K>(src, dst, n / kQK_K, [qw](const float* x, BlockQ3_K& y, size_t i) {
    q3k_block_weighted(x, y, qw + kQK_K * i);
  });
}

void quantize_q4_k_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  for_blocks<BlockQ4_K>(src, dst, n / kQK_K, [qw](const float* x, BlockQ4_K& y, size_t i) {
    uint8_t L[kQK_K];
    k45_weighted_scales(x, 15, qw + kQK_K * i, L, y.scales, &y.d, &y.dmin);
    k4_requantize(x, y.scales, y.d, y.dmin, 15, L);
    q4k_pack(L, y.qs);
  });
}

void quantize_q5_k_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  for_blocks<BlockQ5_K>(src, dst, n / kQK_K, [qw](const float* x, BlockQ5_K& y, size_t i) {
    uint8_t L[kQK_K];
    k45_weighted_scales(x, 31, qw + kQK_K * i, L, y.scales, &y.d, &y.dmin);
    k4_requantize(x, y.scales, y.d, y.dmin, 31, L);
    q5k_pack(L, y.qh, y.qs);
  });
}

void quantize_q6_k_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  for_blocks<BlockQ6_K>(src, dst, n / kQK_K, [qw](const float* x, BlockQ6_K& y, size_t i) {
    q6k_block(x, y, qw + kQK_K * i);
  });
}

}  // namespace geniex::quant::detail
