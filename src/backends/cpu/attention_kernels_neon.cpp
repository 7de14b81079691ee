// aarch64 attention kernels: baseline Armv8-A NEON (fcvtl/fcvtn for the f16 cache and rounding).
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>

#include "backends/cpu/attention_kernels.h"
#include "core/fp16.h"

namespace geniex::backends::cpu::attn {
namespace neon {
namespace {

#define ATTN_TARGET
struct V {
  static constexpr int W = 4;
  static constexpr int CV = 4;
  using R = float32x4_t;
  static R zero() { return vdupq_n_f32(0.0f); }
  static R set1(float x) { return vdupq_n_f32(x); }
  static R load(const float* p) { return vld1q_f32(p); }
  static R load(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static void store(float* p, R x) { vst1q_f32(p, x); }
  static R add(R a, R b) { return vaddq_f32(a, b); }
  static R mul(R a, R b) { return vmulq_f32(a, b); }
  static R fma(R a, R b, R c) { return vfmaq_f32(c, a, b); }
  static float hsum(R a) { return vaddvq_f32(a); }
  static void hsum4(const R* a, float* out) {
    vst1q_f32(out, vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3])));
  }
  static R round_f16(R a) { return vcvt_f32_f16(vcvt_f16_f32(a)); }
};
#include "backends/cpu/attention_kernels_impl.h"  // NOLINT(build/include)
#undef ATTN_TARGET

}  // namespace
}  // namespace neon

const Kernels& neon_kernels() {
  static const Kernels k{neon::attn_dot_f32, neon::attn_dot_f16, neon::attn_pv_f32,
                         neon::attn_pv_f16, neon::attn_scale};
  return k;
}

}  // namespace geniex::backends::cpu::attn
#endif  // __aarch64__
