// aarch64 attention kernels: baseline Armv8-A NEON (fcvtl/fcvtn for the f16 cache and rounding).
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/kernels/exp_simd.h"
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
  static R sub(R a, R b) { return vsubq_f32(a, b); }
  static R exp(R a) { return ::geniex::cpu::exp_neon(a); }
  using D = float64x2_t;
  static D dzero() { return vdupq_n_f64(0.0); }
  static void dacc(D* acc, R e) {
    acc[0] = vaddq_f64(acc[0], vcvt_f64_f32(vget_low_f32(e)));
    acc[1] = vaddq_f64(acc[1], vcvt_high_f64_f32(e));
  }
  static double dsum(const D* acc) { return vaddvq_f64(vaddq_f64(acc[0], acc[1])); }
  static R mul(R a, R b) { return vmulq_f32(a, b); }
  static R max(R a, R b) { return vmaxq_f32(a, b); }
  static R fma(R a, R b, R c) { return vfmaq_f32(c, a, b); }
  static float hsum(R a) { return vaddvq_f32(a); }
  static void hsum4(const R* a, float* out) {
    vst1q_f32(out, vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3])));
  }
  static R round_f16(R a) { return vcvt_f32_f16(vcvt_f16_f32(a)); }
  static R load_i8(const int8_t* p) {
    int32_t w;
    std::memcpy(&w, p, 4);  // 4 bytes: stays inside the block
    const int16x8_t h = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
  }
  static void unpack_q4(const uint8_t* qs, int8_t* out) {
    const uint8x16_t x = vld1q_u8(qs);
    const int8x16_t eight = vdupq_n_s8(8);
    vst1q_s8(out, vsubq_s8(vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(0x0F))), eight));
    vst1q_s8(out + 16, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(x, 4)), eight));
  }
};
#include "backends/cpu/attention_kernels_impl.h"  // NOLINT(build/include)
#undef ATTN_TARGET

}  // namespace
}  // namespace neon

const Kernels& neon_kernels() {
  static const Kernels k{
      neon::attn_dots_f32,     neon::attn_dots_f16,      neon::attn_pv_f32,
      neon::attn_pv_f16,       neon::attn_softmax_exp,   neon::attn_scale,
      neon::attn_dense_scores, neon::attn_row_max,       neon::attn_dequant_q8_0,
      neon::attn_dequant_q4_0, neon::attn_head_dots_f32, neon::attn_head_dots_f16,
      neon::attn_pv_heads_f32, neon::attn_pv_heads_f16};
  return k;
}

}  // namespace geniex::backends::cpu::attn
#endif  // __aarch64__
