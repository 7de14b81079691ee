// The scale searches behind llama.cpp's K-quant, legacy-weighted and IQ4 quantizers
// (ggml-quants.c: make_qx_quants, make_q3_quants, make_qkx2/qkx3_quants, make_qp_quants,
// best_index_int8). Written from the published algorithm with the same float operations in the
// same order, so the blocks they produce are byte-identical to llama-quantize's (the project
// builds with -ffp-contract=off, as ggml-base is built without FMA).
#pragma once

#include <cstdint>
#include <cstring>

namespace geniex::quant::detail {

inline constexpr float kGroupMaxEps = 1e-15f;

/// Round to nearest, ties to even, through the float mantissa (|v| <= 4194303), exactly as
/// ggml's nearest_int does; outside that range it wraps the same way.
inline int ggml_nearest_int(float v) {
  const float shifted = v + 12582912.f;
  int32_t i = 0;
  std::memcpy(&i, &shifted, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

inline int imax(int a, int b) { return a > b ? a : b; }
inline int imin(int a, int b) { return a < b ? a : b; }

/// Symmetric levels in [-nmax, nmax) (stored +nmax in L); rmse_type 1 weights by x^2 or `qw`.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);
/// Q3_K's symmetric search with coordinate descent (stored +nmax in L).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);
/// Asymmetric (scale, min) search with explicit weights; writes -min to *the_min.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
/// Like make_qkx2_quants; weights may be null (then x^2).
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);
/// Non-negative levels in [0, nmax] for the sub-block scales, weighted by `quant_weights`.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);
/// Index of the nearest of the n sorted values `val` to x.
int best_index_int8(int n, const int8_t* val, float x);

}  // namespace geniex::quant::detail
