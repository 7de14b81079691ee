// Scalar reference dot products of K-quant / IQ4_XS weight rows with Q8_K activation rows
// (spec §5.2). Each weight super-block is unpacked to integer quants plus integer sub-block
// scales; the dot is accumulated in int32 per super-block and scaled once by d_w * d_a. The
// min terms of Q2_K / Q4_K / Q5_K use the activation's precomputed bsums.
#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {
namespace {

// Σ over sub-blocks of size `sub` of scale[s] * Σ q[k] * a[k].
inline int scaled_int_dot(const int8_t* q, const int8_t* a, const int* scale, int sub) {
  int sumi = 0;
  for (int s = 0; s < kQK_K / sub; ++s) {
    int dot = 0;
    for (int k = sub * s; k < sub * s + sub; ++k) dot += q[k] * a[k];
    sumi += scale[s] * dot;
  }
  return sumi;
}

}  // namespace

float dot_q2_k(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  int8_t q[kQK_K];
  int sc[16];
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ2_K>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    for (int n = 0; n < 2; ++n) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          q[128 * n + 32 * j + l] = static_cast<int8_t>((x.qs[32 * n + l] >> (2 * j)) & 3);
        }
      }
    }
    int summin = 0;
    for (int s = 0; s < 16; ++s) {
      sc[s] = x.scales[s] & 0xF;
      summin += (x.scales[s] >> 4) * y.bsums[s];
    }
    const int sumi = scaled_int_dot(q, y.qs, sc, 16);
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(sumi) -
           fp16_to_fp32(x.dmin) * y.d * static_cast<float>(summin);
  }
  return sum;
}

float dot_q3_k(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  int8_t q[kQK_K];
  int8_t s8[16];
  int sc[16];
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ3_K>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    for (int n = 0; n < 2; ++n) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          const int q2 = (x.qs[32 * n + l] >> (2 * j)) & 3;
          const bool hi = (x.hmask[l] & (1 << (4 * n + j))) != 0;
          q[128 * n + 32 * j + l] = static_cast<int8_t>(q2 - (hi ? 0 : 4));
        }
      }
    }
    unpack_q3k_scales(x.scales, s8);
    for (int s = 0; s < 16; ++s) sc[s] = s8[s];
    const int sumi = scaled_int_dot(q, y.qs, sc, 16);
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(sumi);
  }
  return sum;
}

namespace {
// Q4_K / Q5_K share everything but the 5th bit.
template <typename Block, bool kHasHighBit>
float dot_q45_k(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  int8_t q[kQK_K];
  int sc[8];
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<Block>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    int summin = 0;
    for (int s = 0; s < 8; ++s) {
      uint8_t isc, imn;
      get_scale_min_k4(s, x.scales, &isc, &imn);
      sc[s] = isc;
      summin += imn * (y.bsums[2 * s] + y.bsums[2 * s + 1]);
      const int c = s / 2, h = s % 2;
      for (int l = 0; l < 32; ++l) {
        int v = (x.qs[32 * c + l] >> (4 * h)) & 0xF;
        if constexpr (kHasHighBit) v |= ((x.qh[l] >> s) & 1) << 4;
        q[32 * s + l] = static_cast<int8_t>(v);
      }
    }
    const int sumi = scaled_int_dot(q, y.qs, sc, 32);
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(sumi) -
           fp16_to_fp32(x.dmin) * y.d * static_cast<float>(summin);
  }
  return sum;
}
}  // namespace

float dot_q4_k(const uint8_t* w, const uint8_t* a, size_t nb) {
  return dot_q45_k<BlockQ4_K, false>(w, a, nb);
}

float dot_q5_k(const uint8_t* w, const uint8_t* a, size_t nb) {
  return dot_q45_k<BlockQ5_K, true>(w, a, nb);
}

float dot_q6_k(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  int8_t q[kQK_K];
  int sc[16];
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ6_K>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = x.ql + 64 * n;
      const uint8_t* qh = x.qh + 32 * n;
      int8_t* qq = q + 128 * n;
      for (int l = 0; l < 32; ++l) {
        qq[l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        qq[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        qq[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        qq[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    for (int s = 0; s < 16; ++s) sc[s] = x.scales[s];
    const int sumi = scaled_int_dot(q, y.qs, sc, 16);
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(sumi);
  }
  return sum;
}

float dot_iq4_xs(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  int8_t q[kQK_K];
  int sc[8];
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockIQ4_XS>(w, i);
    const auto y = load_block<BlockQ8_K>(a, i);
    for (int ib = 0; ib < 8; ++ib) {
      sc[ib] = iq4xs_scale(x, ib) - 32;
      const uint8_t* qs = x.qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        q[32 * ib + j] = kValuesIQ4NL[qs[j] & 0xF];
        q[32 * ib + j + 16] = kValuesIQ4NL[qs[j] >> 4];
      }
    }
    const int sumi = scaled_int_dot(q, y.qs, sc, 32);
    sum += fp16_to_fp32(x.d) * y.d * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace geniex::quant::detail
