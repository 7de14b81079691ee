// Scale searches of llama.cpp's quantizers (see ggml_search.h). Every expression keeps the
// operand order of the reference so float rounding matches; int levels convert to float where
// C's usual arithmetic conversions would.
#include "quant/ggml_search.h"

#include <cmath>

namespace geniex::quant::detail {
namespace {

inline float fl(int v) { return static_cast<float>(v); }

/// The element of largest magnitude (the first of equals), with its sign; `amax` gets |it|.
inline float signed_absmax(int n, const float* x, float& amax) {
  float max = 0;
  amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

inline float qx_weight(const float* qw, int rmse_type, const float* x, int i) {
  if (qw) return qw[i];
  switch (rmse_type) {
    case 1: return x[i] * x[i];
    case 2: return 1;
    case 3: return std::fabs(x[i]);
    default: return std::sqrt(std::fabs(x[i]));
  }
}

}  // namespace

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw) {
  float amax = 0;
  const float max = signed_absmax(n, x, amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = fl(-nmax) / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) {
      const int l = ggml_nearest_int(iscale * x[i]);
      L[i] = static_cast<int8_t>(nmax + imax(-nmax, imin(nmax - 1, l)));
    }
    return 1 / iscale;
  }
  bool return_early = false;
  if (rmse_type < 0) {
    rmse_type = -rmse_type;
    return_early = true;
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = ggml_nearest_int(iscale * x[i]);
    l = imax(-nmax, imin(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = qx_weight(qw, rmse_type, x, i);
    sumlx += w * x[i] * fl(l);
    suml2 += w * fl(l) * fl(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(fl(nmax) + 0.1f * fl(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = ggml_nearest_int(iscale * x[i]);
      l = imax(-nmax, imin(nmax - 1, l));
      const float w = qx_weight(qw, rmse_type, x, i);
      sumlx += w * x[i] * fl(l);
      suml2 += w * fl(l) * fl(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = ggml_nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + imax(-nmax, imin(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse) {
  float amax = 0;
  const float max = signed_absmax(n, x, amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = fl(-nmax) / max;
  if (do_rmse) {
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = ggml_nearest_int(iscale * x[i]);
      l = imax(-nmax, imin(nmax - 1, l));
      L[i] = static_cast<int8_t>(l);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * fl(l);
      suml2 += w * fl(l) * fl(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
      int n_changed = 0;
      for (int i = 0; i < n; ++i) {
        const float w = x[i] * x[i];
        float slx = sumlx - w * x[i] * fl(L[i]);
        if (slx > 0) {
          float sl2 = suml2 - w * fl(L[i]) * fl(L[i]);
          int new_l = ggml_nearest_int(x[i] * sl2 / slx);
          new_l = imax(-nmax, imin(nmax - 1, new_l));
          if (new_l != L[i]) {
            slx += w * x[i] * fl(new_l);
            sl2 += w * fl(new_l) * fl(new_l);
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
              L[i] = static_cast<int8_t>(new_l);
              sumlx = slx;
              suml2 = sl2;
              ++n_changed;
            }
          }
        }
      }
      if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
  }
  for (int i = 0; i < n; ++i) {
    int l = ggml_nearest_int(iscale * x[i]);
    l = imax(-nmax, imin(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
  }
  return 1 / iscale;
}

namespace {

// The shared body of make_qkx2_quants (weights given) and make_qkx3_quants (weights or x^2);
// they differ only in the degenerate-range test.
float make_qkx_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                      float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                      bool use_mad, bool x3) {
  auto weight = [&](int i) { return weights ? weights[i] : x[i] * x[i]; };
  float min = x[0];
  float max = x[0];
  float sum_w = weight(0);
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weight(i);
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (x3 ? max <= min : max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = fl(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = ggml_nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(imax(0, imin(nmax, l)));
    float diff = scale * fl(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weight(i) * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * fl(is) + fl(nmax)) / (max - min);
    float sum_l = 0;
    float sum_l2 = 0;
    float sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = ggml_nearest_int(iscale * (x[i] - min));
      l = imax(0, imin(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weight(i);
      sum_l += w * fl(l);
      sum_l2 += w * fl(l) * fl(l);
      sum_xl += w * fl(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * fl(Laux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weight(i) * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

}  // namespace

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  return make_qkx_quants(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep, use_mad,
                         false);
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  return make_qkx_quants(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep, use_mad, true);
}

float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
  if (max < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = fl(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(ggml_nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * fl(L[i]);
    const float w = quant_weights[i];
    best_mse += w * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * fl(is) + fl(nmax)) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      int l = ggml_nearest_int(iscale_is * x[i]);
      l = imin(nmax, l);
      const float diff = x[i] - scale_is * fl(l);
      const float w = quant_weights[i];
      mse += w * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = ggml_nearest_int(iscale * x[i]);
    l = imin(nmax, l);
    L[i] = static_cast<uint8_t>(l);
    const float w = quant_weights[i];
    sumlx += w * x[i] * fl(l);
    suml2 += w * fl(l) * fl(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = quant_weights[i];
      float slx = sumlx - w * x[i] * fl(L[i]);
      float sl2 = suml2 - w * fl(L[i]) * fl(L[i]);
      if (slx > 0 && sl2 > 0) {
        int new_l = ggml_nearest_int(x[i] * sl2 / slx);
        new_l = imin(nmax, new_l);
        if (new_l != L[i]) {
          slx += w * x[i] * fl(new_l);
          sl2 += w * fl(new_l) * fl(new_l);
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<uint8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

int best_index_int8(int n, const int8_t* val, float x) {
  if (x <= val[0]) return 0;
  if (x >= val[n - 1]) return n - 1;
  int ml = 0;
  int mu = n - 1;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < val[mav]) {
      mu = mav;
    } else {
      ml = mav;
    }
  }
  return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

}  // namespace geniex::quant::detail
