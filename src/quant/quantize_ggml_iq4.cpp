// llama.cpp's IQ4_NL and IQ4_XS quantizers (non-linear 4-bit codebook) and the
// importance-weighted variants of the legacy types Q4_0, Q4_1, Q5_0, Q5_1 (ggml-quants.c's
// quantize_row_*_impl with quant_weights). Same float operations in the same order as the
// reference, so the blocks are byte-identical.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/ggml_search.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {
namespace {

inline float fl(int v) { return static_cast<float>(v); }
inline uint8_t u8(int v) { return static_cast<uint8_t>(v); }

// One IQ4 super-block of `super_block_size` elements in sub-blocks of 32 (IQ4_NL: one
// sub-block, IQ4_XS: eight with 6-bit scales). `ntry` > 0 searches scales around the extremes.
void iq4_block(int super_block_size, const float* x, uint16_t* dh, uint8_t* q4, uint16_t* scales_h,
               uint8_t* scales_l, const float* quant_weights, int ntry) {
  constexpr int kBlock = 32;
  const int8_t* values = kValuesIQ4NL;
  float scales[kQK_K / kBlock];
  float weight[kBlock];
  uint8_t L[kQK_K] = {};
  float sigma2 = 0;
  for (int j = 0; j < super_block_size; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / fl(super_block_size);
  std::memset(q4, 0, static_cast<size_t>(super_block_size / 2));
  dh[0] = fp32_to_fp16(0.f);
  float max_scale = 0;
  float amax_scale = 0;
  for (int ib = 0; ib < super_block_size / kBlock; ++ib) {
    const float* xb = x + ib * kBlock;
    uint8_t* Lb = L + ib * kBlock;
    if (quant_weights) {
      const float* qw = quant_weights + ib * kBlock;
      for (int j = 0; j < kBlock; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
    } else {
      for (int j = 0; j < kBlock; ++j) weight[j] = xb[j] * xb[j];
    }
    float amax = 0;
    float max = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = ntry > 0 ? -max / fl(values[0]) : max / fl(values[0]);
    float id = 1 / d;
    float sumqx = 0;
    float sumq2 = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float al = id * xb[j];
      const int l = best_index_int8(16, values, al);
      Lb[j] = u8(l);
      const float q = values[l];
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
      id = fl(itry + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < kBlock; ++j) {
        const float al = id * xb[j];
        const int l = best_index_int8(16, values, al);
        const float q = values[l];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    const float abs_d = std::fabs(d);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = d;
    }
  }
  if (super_block_size / kBlock > 1) {
    const int nb = super_block_size / kBlock;
    std::memset(scales_h, 0, static_cast<size_t>((nb + 7) / 8) * sizeof(uint16_t));
    const float d = -max_scale / 32;
    dh[0] = fp32_to_fp16(d);
    const float id = d != 0.0f ? 1 / d : 0.f;
    for (int ib = 0; ib < nb; ++ib) {
      int l = ggml_nearest_int(id * scales[ib]);
      l = imax(-32, imin(31, l));
      const float dl = d * fl(l);
      const float idl = dl != 0.0f ? 1 / dl : 0.f;
      uint8_t* Lb = L + ib * kBlock;
      const float* xb = x + ib * kBlock;
      for (int j = 0; j < kBlock; ++j) Lb[j] = u8(best_index_int8(16, values, idl * xb[j]));
      l += 32;
      const auto l_l = u8(l & 0xf);
      const auto l_h = u8(l >> 4);
      if (ib % 2 == 0) {
        scales_l[ib / 2] = l_l;
      } else {
        scales_l[ib / 2] = u8(scales_l[ib / 2] | (l_l << 4));
      }
      scales_h[ib / 8] = static_cast<uint16_t>(scales_h[ib / 8] | (l_h << 2 * (ib % 8)));
    }
  } else {
    dh[0] = fp32_to_fp16(scales[0]);
    if (ntry > 0) {
      const float id = scales[0] != 0.0f ? 1 / scales[0] : 0;
      for (int j = 0; j < super_block_size; ++j) L[j] = u8(best_index_int8(16, values, id * x[j]));
    }
  }
  for (int i = 0; i < super_block_size / 32; ++i) {
    for (int j = 0; j < 16; ++j) q4[16 * i + j] = u8(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
  }
}

float row_sigma2(const float* x, size_t n) {
  float sum_x2 = 0;
  for (size_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / static_cast<float>(n);
}

void legacy_weights(const float* xb, const float* qw, float sigma2, float* weight) {
  for (int j = 0; j < kQK; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
}

void pack_q5(const uint8_t* L, uint8_t* qh_out, uint8_t* qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const uint8_t xi0 = L[j];
    const uint8_t xi1 = L[j + 16];
    qs[j] = u8((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
    qh |= ((xi1 & 0x10u) >> 4) << (j + kQK / 2);
  }
  std::memcpy(qh_out, &qh, sizeof(qh));
}

}  // namespace

void quantize_iq4_nl(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    BlockIQ4_NL y{};
    uint16_t unused_h = 0;
    iq4_block(kQK, src + i * kQK, &y.d, y.qs, &unused_h, nullptr, nullptr, 7);
    store_block(dst, i, y);
  }
}

void quantize_iq4_xs(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    BlockIQ4_XS y{};
    iq4_block(kQK_K, src + i * kQK_K, &y.d, y.qs, &y.scales_h, y.scales_l, nullptr, 7);
    store_block(dst, i, y);
  }
}

void quantize_iq4_nl_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  for (size_t i = 0; i < n / kQK; ++i) {
    BlockIQ4_NL y{};
    uint16_t unused_h = 0;
    iq4_block(kQK, src + i * kQK, &y.d, y.qs, &unused_h, nullptr, qw + i * kQK, 7);
    store_block(dst, i, y);
  }
}

void quantize_iq4_xs_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  for (size_t i = 0; i < n / kQK_K; ++i) {
    BlockIQ4_XS y{};
    iq4_block(kQK_K, src + i * kQK_K, &y.d, y.qs, &y.scales_h, y.scales_l, qw + i * kQK_K, 7);
    store_block(dst, i, y);
  }
}

void quantize_q4_0_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  const float sigma2 = row_sigma2(src, n);
  float weight[kQK];
  int8_t L[kQK];
  for (size_t ib = 0; ib < n / kQK; ++ib) {
    const float* xb = src + kQK * ib;
    legacy_weights(xb, qw + kQK * ib, sigma2, weight);
    BlockQ4_0 y{};
    y.d = fp32_to_fp16(make_qx_quants(kQK, 8, xb, L, 1, weight));
    for (int j = 0; j < 16; ++j) y.qs[j] = u8(L[j] | (L[j + 16] << 4));
    store_block(dst, ib, y);
  }
}

void quantize_q4_1_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  const float sigma2 = row_sigma2(src, n);
  float weight[kQK];
  uint8_t L[kQK];
  uint8_t Laux[kQK];
  for (size_t ib = 0; ib < n / kQK; ++ib) {
    const float* xb = src + kQK * ib;
    legacy_weights(xb, qw + kQK * ib, sigma2, weight);
    float min = 0;
    const float d = make_qkx3_quants(kQK, 15, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
    BlockQ4_1 y{};
    y.d = fp32_to_fp16(d);
    y.m = fp32_to_fp16(-min);
    for (int j = 0; j < 16; ++j) y.qs[j] = u8(L[j] | (L[j + 16] << 4));
    store_block(dst, ib, y);
  }
}

void quantize_q5_0_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  const float sigma2 = row_sigma2(src, n);
  float weight[kQK];
  int8_t L[kQK];
  uint8_t Lu[kQK];
  for (size_t ib = 0; ib < n / kQK; ++ib) {
    const float* xb = src + kQK * ib;
    legacy_weights(xb, qw + kQK * ib, sigma2, weight);
    BlockQ5_0 y{};
    y.d = fp32_to_fp16(make_qx_quants(kQK, 16, xb, L, 1, weight));
    for (int j = 0; j < kQK; ++j) Lu[j] = static_cast<uint8_t>(L[j]);
    pack_q5(Lu, y.qh, y.qs);
    store_block(dst, ib, y);
  }
}

void quantize_q5_1_w(const float* src, uint8_t* dst, size_t n, const float* qw) {
  const float sigma2 = row_sigma2(src, n);
  float weight[kQK];
  uint8_t L[kQK];
  uint8_t Laux[kQK];
  for (size_t ib = 0; ib < n / kQK; ++ib) {
    const float* xb = src + kQK * ib;
    legacy_weights(xb, qw + kQK * ib, sigma2, weight);
    float min = 0;
    const float d = make_qkx3_quants(kQK, 31, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
    BlockQ5_1 y{};
    y.d = fp32_to_fp16(d);
    y.m = fp32_to_fp16(-min);
    pack_q5(L, y.qh, y.qs);
    store_block(dst, ib, y);
  }
}

}  // namespace geniex::quant::detail
