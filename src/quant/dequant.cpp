// Dequantization of the scalar and 32-element block types (spec §4.1-4.6, 4.13, 4.15).
// Operation order follows gguf-py's numpy code so results are bit-identical: each element is
// one f32 multiply (plus one add for the min variants), no fused multiply-add.
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {

void dequant_f32(const uint8_t* src, float* dst, size_t nb) { std::memcpy(dst, src, nb * 4); }

void dequant_f16(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = fp16_to_fp32(h);
  }
}

void dequant_bf16(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = bf16_to_fp32(h);
  }
}

void dequant_q4_0(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>((b.qs[j] & 0xF) - 8);
      y[j + kQK / 2] = d * static_cast<float>((b.qs[j] >> 4) - 8);
    }
  }
}

void dequant_q4_1(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(b.qs[j] & 0xF) + m;
      y[j + kQK / 2] = d * static_cast<float>(b.qs[j] >> 4) + m;
    }
  }
}

namespace {
// The 5-bit quants of a Q5_0 / Q5_1 block (0..31).
inline void unpack_q5(const uint8_t* qh, const uint8_t* qs, int* q) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = (qs[j] & 0xF) | static_cast<int>(((h >> j) & 1u) << 4);
    q[j + kQK / 2] = (qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4);
  }
}
}  // namespace

void dequant_q5_0(const uint8_t* src, float* dst, size_t nb) {
  int q[kQK];
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    unpack_q5(b.qh, b.qs, q);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(q[j] - 16);
  }
}

void dequant_q5_1(const uint8_t* src, float* dst, size_t nb) {
  int q[kQK];
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    unpack_q5(b.qh, b.qs, q);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(q[j]) + m;
  }
}

void dequant_q8_0(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

void dequant_q8_1(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ8_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

void dequant_iq4_nl(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockIQ4_NL>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(kValuesIQ4NL[b.qs[j] & 0xF]);
      y[j + kQK / 2] = d * static_cast<float>(kValuesIQ4NL[b.qs[j] >> 4]);
    }
  }
}

void dequant_mxfp4(const uint8_t* src, float* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockMXFP4>(src, i);
    const float d = e8m0_to_fp32_half(b.e);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(kValuesMXFP4[b.qs[j] & 0xF]);
      y[j + kQK / 2] = d * static_cast<float>(kValuesMXFP4[b.qs[j] >> 4]);
    }
  }
}

}  // namespace geniex::quant::detail
