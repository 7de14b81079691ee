// Lane-parallel versions of the two searches that dominate K-quant quantization time
// (make_qkx2_quants for Q4_K/Q5_K, make_qx_quants for Q6_K): the sub-blocks of one super-block
// are independent, so each SIMD lane runs one sub-block's search with exactly the scalar
// sequence of float operations (every reduction stays in element order within its lane, and
// data-dependent branches become per-lane selects). The results are bit-identical to the
// scalar reference in ggml_search.cpp; GCC/Clang vector extensions keep it portable.
#pragma once

#include <cstdint>

namespace geniex::quant::detail {

/// make_qkx2_quants(n, nmax, ..., use_mad = false) on 8 sub-blocks at once: sub-block j is
/// x[n*j .. n*j + n) (weights and L the same layout); n <= 32. Writes the 8 scales and mins.
void make_qkx2_quants_x8(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                         float* the_min, float* scales, float rmin, float rdelta, int nstep);

/// make_qx_quants(16, nmax, ..., rmse_type = 1, qw = x^2) on 16 sub-blocks of 16 at once:
/// sub-block j is x[16*j .. 16*j + 16); writes the 16 scales.
void make_qx_quants_x16(int nmax, const float* x, int8_t* L, float* scales);

}  // namespace geniex::quant::detail
