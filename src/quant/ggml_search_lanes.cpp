// See ggml_search_lanes.h. Each expression mirrors the scalar one in ggml_search.cpp operand for
// operand; comparisons give per-lane masks that select what the scalar branch would have kept.
#include "quant/ggml_search_lanes.h"

#include <cstring>

#include "quant/ggml_search.h"

// The vector types are internal to this file: no ABI crosses it.
#pragma GCC diagnostic ignored "-Wpsabi"

// x86-64: an AVX2 and an AVX-512 clone beside the baseline one, picked at load time (ifunc);
// -ffp-contract=off keeps every clone free of fused multiply-adds, so all give the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define GENIEX_LANES_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GENIEX_LANES_CLONES
#endif

namespace geniex::quant::detail {
namespace {

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

template <typename F, typename I>
inline I nearest(F v) {
  const F shifted = v + 12582912.f;
  I i;
  std::memcpy(&i, &shifted, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

template <typename I>
inline I clamp(I v, int lo, int hi) {
  const I lo_v = I{} + lo;
  const I hi_v = I{} + hi;
  v = v < lo_v ? lo_v : v;
  return v > hi_v ? hi_v : v;
}

template <typename F, typename I>
inline F to_float(I v) {
  return __builtin_convertvector(v, F);
}

template <typename F, typename I>
inline F fabs_v(F v) {
  I b;
  std::memcpy(&b, &v, sizeof(b));
  b &= 0x7fffffff;
  F r;
  std::memcpy(&r, &b, sizeof(r));
  return r;
}

}  // namespace

GENIEX_LANES_CLONES void make_qkx2_quants_x8(int n, int nmax, const float* x, const float* weights,
                                             uint8_t* L, float* the_min, float* scales, float rmin,
                                             float rdelta, int nstep) {
  using F = v8f;
  using I = v8i;
  F X[32] = {};
  F W[32] = {};
  I Lb[32];
  I La[32];
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 8; ++j) {
      X[i][j] = x[n * j + i];
      W[i][j] = weights[n * j + i];
    }
  }
  F min = X[0];
  F max = X[0];
  F sum_w = W[0];
  F sum_x = sum_w * X[0];
  for (int i = 1; i < n; ++i) {
    min = X[i] < min ? X[i] : min;
    max = X[i] > max ? X[i] : max;
    sum_w += W[i];
    sum_x += W[i] * X[i];
  }
  const F zero = {};
  min = min > 0 ? zero : min;
  const I degenerate = max == min;
  F iscale = static_cast<float>(nmax) / (max - min);
  F scale = 1.0f / iscale;
  F best_error = zero;
  for (int i = 0; i < n; ++i) {
    Lb[i] = clamp(nearest<F, I>(iscale * (X[i] - min)), 0, nmax);
    F diff = scale * to_float<F, I>(Lb[i]) + min - X[i];
    diff = diff * diff;
    best_error += W[i] * diff;
  }
  if (nstep >= 1) {
    for (int is = 0; is <= nstep; ++is) {
      const float num = rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax);
      iscale = num / (max - min);  // min moves when a step wins, as in the scalar loop
      F sum_l = zero;
      F sum_l2 = zero;
      F sum_xl = zero;
      for (int i = 0; i < n; ++i) {
        La[i] = clamp(nearest<F, I>(iscale * (X[i] - min)), 0, nmax);
        const F l = to_float<F, I>(La[i]);
        sum_l += W[i] * l;
        sum_l2 += W[i] * l * l;
        sum_xl += W[i] * l * X[i];
      }
      const F D = sum_w * sum_l2 - sum_l * sum_l;
      const I dpos = D > 0;
      F this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      F this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      const I mpos = this_min > 0;
      this_min = mpos ? zero : this_min;
      this_scale = mpos ? sum_xl / sum_l2 : this_scale;
      F cur_error = zero;
      for (int i = 0; i < n; ++i) {
        F diff = this_scale * to_float<F, I>(La[i]) + this_min - X[i];
        diff = diff * diff;
        cur_error += W[i] * diff;
      }
      const I better = dpos & (cur_error < best_error);
      for (int i = 0; i < n; ++i) Lb[i] = better ? La[i] : Lb[i];
      best_error = better ? cur_error : best_error;
      scale = better ? this_scale : scale;
      min = better ? this_min : min;
    }
  }
  for (int j = 0; j < 8; ++j) {
    the_min[j] = -min[j];
    if (degenerate[j]) {
      for (int i = 0; i < n; ++i) L[n * j + i] = 0;
      scales[j] = 0.f;
      continue;
    }
    for (int i = 0; i < n; ++i) L[n * j + i] = static_cast<uint8_t>(Lb[i][j]);
    scales[j] = scale[j];
  }
}

namespace {

// Eight sub-blocks of 16: lane j is x[16*j .. 16*j + 16).
GENIEX_LANES_CLONES void qx_quants_x8(int nmax, const float* x, int8_t* L, float* scales) {
  using F = v8f;
  using I = v8i;
  constexpr int n = 16;
  F X[n] = {};
  I Lb[n];
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 8; ++j) X[i][j] = x[n * j + i];
  }
  const F zero = {};
  F max = zero;
  F amax = zero;
  for (int i = 0; i < n; ++i) {
    const F ax = fabs_v<F, I>(X[i]);
    const I upd = ax > amax;
    amax = upd ? ax : amax;
    max = upd ? X[i] : max;
  }
  const I all_zero = amax < kGroupMaxEps;
  F iscale = static_cast<float>(-nmax) / max;
  F sumlx = zero;
  F suml2 = zero;
  for (int i = 0; i < n; ++i) {
    const I l = clamp(nearest<F, I>(iscale * X[i]), -nmax, nmax - 1);
    Lb[i] = l + nmax;
    const F w = X[i] * X[i];
    const F lf = to_float<F, I>(l);
    sumlx += w * X[i] * lf;
    suml2 += w * lf * lf;
  }
  F scale = suml2 != 0 ? sumlx / suml2 : zero;
  F best = scale * sumlx;
  I La[n];
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float num = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is));
    iscale = num / max;
    sumlx = suml2 = zero;
    for (int i = 0; i < n; ++i) {
      const I l = clamp(nearest<F, I>(iscale * X[i]), -nmax, nmax - 1);
      La[i] = l + nmax;
      const F w = X[i] * X[i];
      const F lf = to_float<F, I>(l);
      sumlx += w * X[i] * lf;
      suml2 += w * lf * lf;
    }
    const I upd = (suml2 > 0) & (sumlx * sumlx > best * suml2);
    for (int i = 0; i < n; ++i) Lb[i] = upd ? La[i] : Lb[i];
    const F new_scale = sumlx / suml2;
    scale = upd ? new_scale : scale;
    best = upd ? new_scale * sumlx : best;
  }
  for (int j = 0; j < 8; ++j) {
    if (all_zero[j]) {
      for (int i = 0; i < n; ++i) L[n * j + i] = 0;
      scales[j] = 0.f;
      continue;
    }
    for (int i = 0; i < n; ++i) L[n * j + i] = static_cast<int8_t>(Lb[i][j]);
    scales[j] = scale[j];
  }
}

}  // namespace

void make_qx_quants_x16(int nmax, const float* x, int8_t* L, float* scales) {
  qx_quants_x8(nmax, x, L, scales);
  qx_quants_x8(nmax, x + 128, L + 128, scales + 8);
}

}  // namespace geniex::quant::detail
