// Scalar attention kernels (the fallback of every target) and the run-time choice of a kernel set.
#include "backends/cpu/attention_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/exp_simd.h"
#include "core/fp16.h"

namespace geniex::backends::cpu::attn {
namespace scalar {
namespace {

#define ATTN_TARGET
struct V {
  static constexpr int W = 1;
  static constexpr int CV = 4;
  using R = float;
  static R zero() { return 0.0f; }
  static R set1(float x) { return x; }
  static R load(const float* p) { return *p; }
  static R load(const uint16_t* p) { return fp16_to_fp32(*p); }
  static void store(float* p, R x) { *p = x; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R exp(R a) { return ::geniex::cpu::exp_poly(a); }
  using D = double;
  static D dzero() { return 0.0; }
  static void dacc(D* acc, R e) { acc[0] += e; }
  static double dsum(const D* acc) { return acc[0] + acc[1]; }
  static R mul(R a, R b) { return a * b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static R fma(R a, R b, R c) { return a * b + c; }
  static float hsum(R a) { return a; }
  static void hsum4(const R* a, float* out) { std::copy(a, a + 4, out); }
  static R round_f16(R a) { return fp16_to_fp32(fp32_to_fp16(a)); }
  static R load_i8(const int8_t* p) { return static_cast<float>(*p); }
  static void unpack_q4(const uint8_t* qs, int8_t* out) {
    for (int j = 0; j < 16; ++j) {
      out[j] = static_cast<int8_t>((qs[j] & 0xF) - 8);
      out[j + 16] = static_cast<int8_t>((qs[j] >> 4) - 8);
    }
  }
};
#include "backends/cpu/attention_kernels_impl.h"  // NOLINT(build/include)
#undef ATTN_TARGET

}  // namespace
}  // namespace scalar

const Kernels& scalar_kernels() {
  static const Kernels k{
      scalar::attn_dots_f32,     scalar::attn_dots_f16,      scalar::attn_pv_f32,
      scalar::attn_pv_f16,       scalar::attn_softmax_exp,   scalar::attn_scale,
      scalar::attn_dense_scores, scalar::attn_row_max,       scalar::attn_dequant_q8_0,
      scalar::attn_dequant_q4_0, scalar::attn_head_dots_f32, scalar::attn_head_dots_f16,
      scalar::attn_pv_heads_f32, scalar::attn_pv_heads_f16};
  return k;
}

const Kernels& kernels_for(geniex::cpu::Isa isa) {
  using geniex::cpu::Isa;
#if defined(__x86_64__)
  if (isa == Isa::kAvx512 || isa == Isa::kAvx512Vnni) return avx512_kernels();
  if (isa == Isa::kAvx2) return avx2_kernels();
#elif defined(__aarch64__)
  if (geniex::cpu::is_neon(isa)) return neon_kernels();
#endif
  (void)isa;
  return scalar_kernels();
}

}  // namespace geniex::backends::cpu::attn
