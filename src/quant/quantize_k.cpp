// Reference quantizers for the K-quant super-block types (Q4_K, Q5_K, Q6_K) and the Q8_K
// activation format. gguf-py has no quantizer for these, so they are tested by round-trip error
// bounds, not byte equality.
//
// Q8_K follows llama.cpp's reference scheme (spec §4.12). Q4_K/Q5_K/Q6_K use our own
// round-to-nearest scheme in two levels:
//   1. per sub-block, a small search over candidate inverse scales; each candidate's integer
//      levels are refit by least squares (scale and, for Q4_K/Q5_K, min) and the fit with the
//      smallest squared error wins;
//   2. the sub-block scales/mins are themselves quantized against the super-block f16 scale(s),
//      and the element quants are recomputed from the scales actually stored, so the block
//      decodes to the nearest representable values for its stored scales.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {
namespace {

// Round half to even; saturates far outside the int8 range and maps NaN to 0, so degenerate
// inputs (subnormal scales whose inverse overflows) stay well defined.
inline int nearest_int(float v) {
  if (!(v == v)) return 0;
  const float c = std::clamp(v, -1048576.0f, 1048576.0f);
  return static_cast<int>(std::nearbyint(c));
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// f16 of v, rounded to nearest but then grown by whole ulps (at most a few) until
// |ref| / |result| <= max_level, so the largest sub-block scale still fits its integer range.
// Matters when v falls into the f16 subnormal range, where one ulp is a large relative step.
uint16_t fp16_scale_for(float v, float ref, float max_level) {
  uint16_t h = fp32_to_fp16(v);
  for (int k = 0; k < 4 && (h & 0x7FFF) != 0 && (h & 0x7FFF) < 0x7BFF; ++k) {
    if (std::fabs(ref) / std::fabs(fp16_to_fp32(h)) <= max_level) break;
    ++h;  // sign-magnitude: +1 grows the magnitude for either sign
  }
  return h;
}

// Fits x ≈ scale * q - min with q in [0, nmax], scale >= 0, min >= 0. Returns scale, writes min.
float fit_scale_min(const float* x, int n, int nmax, float* min_out) {
  float lo = x[0];
  float hi = x[0];
  for (int j = 1; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  lo = std::min(lo, 0.0f);  // the stored min is subtracted, so the offset is never positive
  if (!(hi > lo)) {         // constant (non-positive) block
    *min_out = -lo;
    return 0.0f;
  }
  // Baseline: the plain min/max fit.
  float best_a = (hi - lo) / static_cast<float>(nmax);
  float best_b = lo;
  double best_err = std::numeric_limits<double>::infinity();
  {
    double err = 0;
    const float id = 1.0f / best_a;
    for (int j = 0; j < n; ++j) {
      const int q = clamp_int(nearest_int((x[j] - lo) * id), 0, nmax);
      const double e = static_cast<double>(best_a) * q + best_b - x[j];
      err += e * e;
    }
    best_err = err;
  }
  for (int k = 0; k <= 20; ++k) {
    const float iscale =
        (static_cast<float>(nmax) + (-1.0f + 0.1f * static_cast<float>(k))) / (hi - lo);
    double sq = 0, sx = 0, sqq = 0, sqx = 0;
    int qv[kQK_K];
    for (int j = 0; j < n; ++j) {
      const int q = clamp_int(nearest_int(iscale * (x[j] - lo)), 0, nmax);
      qv[j] = q;
      sq += q;
      sx += x[j];
      sqq += static_cast<double>(q) * q;
      sqx += static_cast<double>(q) * x[j];
    }
    const double det = n * sqq - sq * sq;
    if (det <= 0) continue;
    double a = (n * sqx - sq * sx) / det;
    double b = (sx - a * sq) / n;
    if (b > 0) {  // would need a positive offset: refit with b = 0
      b = 0;
      a = sqq > 0 ? sqx / sqq : 0;
    }
    if (!(a > 0)) continue;
    double err = 0;
    for (int j = 0; j < n; ++j) {
      const double e = a * qv[j] + b - x[j];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_a = static_cast<float>(a);
      best_b = static_cast<float>(b);
    }
  }
  *min_out = -best_b;
  return best_a;
}

// Fits x ≈ scale * q with q in [-nmax - 1, nmax] (scale may be negative). Returns scale.
float fit_scale_signed(const float* x, int n, int nmax) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float a = std::fabs(x[j]);
    if (a > amax) {
      amax = a;
      max = x[j];
    }
  }
  if (amax < 1e-30f) return 0.0f;
  double best_score = -1;
  float best_a = 0.0f;
  for (int k = -9; k <= 9; ++k) {
    const float iscale = -(static_cast<float>(nmax + 1) + 0.1f * static_cast<float>(k)) / max;
    double sqq = 0, sqx = 0;
    for (int j = 0; j < n; ++j) {
      const int q = clamp_int(nearest_int(iscale * x[j]), -nmax - 1, nmax);
      sqq += static_cast<double>(q) * q;
      sqx += static_cast<double>(q) * x[j];
    }
    // Minimising sum (a q - x)^2 over a gives a = sqx / sqq and removes sqx^2 / sqq.
    if (sqq > 0 && sqx * sqx / sqq > best_score) {
      best_score = sqx * sqx / sqq;
      best_a = static_cast<float>(sqx / sqq);
    }
  }
  return best_a;
}

// Shared Q4_K / Q5_K body: 8 sub-blocks of 32, 6-bit scales and mins. Fills L[256] (0..nmax)
// and the header fields.
void quantize_k_scale_min(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out,
                          uint8_t* scales, uint8_t* L) {
  float sc[8], mn[8];
  float max_sc = 0.0f, max_mn = 0.0f;
  for (int s = 0; s < 8; ++s) {
    sc[s] = fit_scale_min(x + 32 * s, 32, nmax, &mn[s]);
    max_sc = std::max(max_sc, sc[s]);
    max_mn = std::max(max_mn, mn[s]);
  }
  // The 6-bit levels are taken against the f16-rounded super-scales, which absorbs their
  // rounding error (large when they fall into the f16 subnormal range).
  *d_out = fp16_scale_for(max_sc / 63.0f, max_sc, 63.5f);
  *dmin_out = fp16_scale_for(max_mn / 63.0f, max_mn, 63.5f);
  const float d16 = fp16_to_fp32(*d_out);
  const float dmin16 = fp16_to_fp32(*dmin_out);
  uint8_t ls[8], lm[8];
  for (int s = 0; s < 8; ++s) {
    ls[s] = static_cast<uint8_t>(d16 > 0 ? clamp_int(nearest_int(sc[s] / d16), 0, 63) : 0);
    lm[s] = static_cast<uint8_t>(dmin16 > 0 ? clamp_int(nearest_int(mn[s] / dmin16), 0, 63) : 0);
  }
  std::memset(scales, 0, kKScaleSize);
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      scales[s] = ls[s];
      scales[s + 4] = lm[s];
    } else {
      scales[s + 4] = static_cast<uint8_t>((ls[s] & 0xF) | ((lm[s] & 0xF) << 4));
      scales[s - 4] = static_cast<uint8_t>(scales[s - 4] | ((ls[s] >> 4) << 6));
      scales[s] = static_cast<uint8_t>(scales[s] | ((lm[s] >> 4) << 6));
    }
  }
  // Requantize against the scales as stored.
  const float d = fp16_to_fp32(*d_out);
  const float dmin = fp16_to_fp32(*dmin_out);
  for (int s = 0; s < 8; ++s) {
    uint8_t isc, imn;
    get_scale_min_k4(s, scales, &isc, &imn);
    const float dl = d * static_cast<float>(isc);
    const float ml = dmin * static_cast<float>(imn);
    for (int j = 0; j < 32; ++j) {
      const int q = dl > 0 ? nearest_int((x[32 * s + j] + ml) / dl) : 0;
      L[32 * s + j] = static_cast<uint8_t>(clamp_int(q, 0, nmax));
    }
  }
}

}  // namespace

void quantize_q4_k(const float* src, uint8_t* dst, size_t nb) {
  uint8_t L[kQK_K];
  for (size_t i = 0; i < nb; ++i) {
    BlockQ4_K b;
    quantize_k_scale_min(src + i * kQK_K, 15, &b.d, &b.dmin, b.scales, L);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        b.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, size_t nb) {
  uint8_t L[kQK_K];
  for (size_t i = 0; i < nb; ++i) {
    BlockQ5_K b;
    quantize_k_scale_min(src + i * kQK_K, 31, &b.d, &b.dmin, b.scales, L);
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int q0 = L[64 * c + l];
        const int q1 = L[64 * c + 32 + l];
        b.qs[32 * c + l] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
        b.qh[l] =
            static_cast<uint8_t>(b.qh[l] | ((q0 >> 4) << (2 * c)) | ((q1 >> 4) << (2 * c + 1)));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q6_k(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    float sc[16];
    float amax = 0.0f, max_sc = 0.0f;
    for (int s = 0; s < 16; ++s) {
      sc[s] = fit_scale_signed(x + 16 * s, 16, 31);
      if (std::fabs(sc[s]) > amax) {
        amax = std::fabs(sc[s]);
        max_sc = sc[s];
      }
    }
    BlockQ6_K b;
    if (amax == 0.0f) {
      std::memset(&b, 0, sizeof(b));
      // q = 0 is stored as 32: ql nibbles 0, qh pairs 2 (binary 10) in every 2-bit field.
      std::memset(b.qh, 0xAA, sizeof(b.qh));
      store_block(dst, i, b);
      continue;
    }
    // d = max_sc / -128 (so the largest sub-scale maps to level -128), rounded to f16; the
    // int8 levels are taken against the rounded d.
    b.d = fp16_scale_for(max_sc / -128.0f, max_sc, 128.0f);
    const float d = fp16_to_fp32(b.d);
    for (int s = 0; s < 16; ++s) {
      const int ls = d != 0.0f ? nearest_int(sc[s] / d) : 0;
      b.scales[s] = static_cast<int8_t>(clamp_int(ls, -128, 127));
    }
    uint8_t L[kQK_K];
    for (int s = 0; s < 16; ++s) {
      const float dl = d * static_cast<float>(b.scales[s]);
      for (int j = 0; j < 16; ++j) {
        const int q = dl != 0.0f ? nearest_int(x[16 * s + j] / dl) : 0;
        L[16 * s + j] = static_cast<uint8_t>(clamp_int(q, -32, 31) + 32);
      }
    }
    for (int n = 0; n < 2; ++n) {
      const uint8_t* q = L + 128 * n;
      for (int l = 0; l < 32; ++l) {
        b.ql[64 * n + l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
        b.ql[64 * n + l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
        b.qh[32 * n + l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                                ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q8_k(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float a = std::fabs(x[j]);
      if (a > amax) {
        amax = a;
        max = x[j];
      }
    }
    BlockQ8_K b;
    if (amax == 0.0f) {
      std::memset(&b, 0, sizeof(b));
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      b.qs[j] = static_cast<int8_t>(clamp_int(nearest_int(iscale * x[j]), -128, 127));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b.qs[16 * g + j];
      b.bsums[g] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
    store_block(dst, i, b);
  }
}

}  // namespace geniex::quant::detail
