// Dequantization of the 256-element super-block types (spec §4.7-4.12, 4.14).
// Operation order follows gguf-py: the sub-block scale is formed first (d * sc, dmin * mn), then
// each element is `scale * q` or `scale * q - min` in f32, so results are bit-identical.
#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {

void dequant_q2_k(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int n = 0; n < 2; ++n) {
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = b.scales[8 * n + 2 * j + half];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int q = (b.qs[32 * n + l] >> (2 * j)) & 3;
            y[128 * n + 32 * j + l] = dl * static_cast<float>(q) - ml;
          }
        }
      }
    }
  }
}

void dequant_q3_k(const uint8_t* src, float* dst, size_t nb) {
  int8_t s[16];
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    unpack_q3k_scales(b.scales, s);
    float* y = dst + i * kQK_K;
    for (int n = 0; n < 2; ++n) {
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d * static_cast<float>(s[8 * n + 2 * j + half]);
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int q2 = (b.qs[32 * n + l] >> (2 * j)) & 3;
            const bool hi = (b.hmask[l] & (1 << (4 * n + j))) != 0;
            const int q = q2 - (hi ? 0 : 4);
            y[128 * n + 32 * j + l] = dl * static_cast<float>(q);
          }
        }
      }
    }
  }
}

void dequant_q4_k(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int c = 0; c < 4; ++c) {
      for (int h = 0; h < 2; ++h) {
        uint8_t sc, mn;
        get_scale_min_k4(2 * c + h, b.scales, &sc, &mn);
        const float dl = d * static_cast<float>(sc);
        const float ml = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; ++l) {
          const int q = (b.qs[32 * c + l] >> (4 * h)) & 0xF;
          y[64 * c + 32 * h + l] = dl * static_cast<float>(q) - ml;
        }
      }
    }
  }
}

void dequant_q5_k(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int c = 0; c < 4; ++c) {
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * c + h;
        uint8_t sc, mn;
        get_scale_min_k4(s, b.scales, &sc, &mn);
        const float dl = d * static_cast<float>(sc);
        const float ml = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; ++l) {
          const int q = ((b.qs[32 * c + l] >> (4 * h)) & 0xF) | (((b.qh[l] >> s) & 1) << 4);
          y[64 * c + 32 * h + l] = dl * static_cast<float>(q) - ml;
        }
      }
    }
  }
}

void dequant_q6_k(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    float dl[16];
    for (int s = 0; s < 16; ++s) dl[s] = d * static_cast<float>(b.scales[s]);
    float* y = dst + i * kQK_K;
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = b.ql + 64 * n;
      const uint8_t* qh = b.qh + 32 * n;
      for (int l = 0; l < 32; ++l) {
        const int is = 8 * n + l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[128 * n + l] = dl[is + 0] * static_cast<float>(q1);
        y[128 * n + l + 32] = dl[is + 2] * static_cast<float>(q2);
        y[128 * n + l + 64] = dl[is + 4] * static_cast<float>(q3);
        y[128 * n + l + 96] = dl[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

void dequant_q8_k(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ8_K>(src, i);
    float* y = dst + i * kQK_K;
    for (int j = 0; j < kQK_K; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

void dequant_iq4_xs(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockIQ4_XS>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const float dl = d * static_cast<float>(iq4xs_scale(b, ib) - 32);
      const uint8_t* qs = b.qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        y[32 * ib + j] = dl * static_cast<float>(kValuesIQ4NL[qs[j] & 0xF]);
        y[32 * ib + j + 16] = dl * static_cast<float>(kValuesIQ4NL[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace geniex::quant::detail
