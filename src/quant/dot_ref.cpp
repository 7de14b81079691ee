// Scalar reference dot products of one weight row with one activation row (spec §5.2), for the
// float types and the 32-element block types. Blocks are dotted in integer arithmetic and then
// scaled, in the same order as ggml's generic (non-SIMD) kernels; floats accumulate left to right.
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {

float dot_f32(const uint8_t* w, const uint8_t* a, size_t nb) {
  double sum = 0.0;
  for (size_t i = 0; i < nb; ++i) {
    float x, y;
    std::memcpy(&x, w + 4 * i, 4);
    std::memcpy(&y, a + 4 * i, 4);
    sum += static_cast<double>(x * y);
  }
  return static_cast<float>(sum);
}

float dot_f16(const uint8_t* w, const uint8_t* a, size_t nb) {
  double sum = 0.0;
  for (size_t i = 0; i < nb; ++i) {
    uint16_t x, y;
    std::memcpy(&x, w + 2 * i, 2);
    std::memcpy(&y, a + 2 * i, 2);
    sum += static_cast<double>(fp16_to_fp32(x) * fp16_to_fp32(y));
  }
  return static_cast<float>(sum);
}

float dot_bf16(const uint8_t* w, const uint8_t* a, size_t nb) {
  double sum = 0.0;
  for (size_t i = 0; i < nb; ++i) {
    uint16_t x, y;
    std::memcpy(&x, w + 2 * i, 2);
    std::memcpy(&y, a + 2 * i, 2);
    sum += static_cast<double>(bf16_to_fp32(x) * bf16_to_fp32(y));
  }
  return static_cast<float>(sum);
}

float dot_q4_0(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ4_0>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += ((x.qs[j] & 0xF) - 8) * y.qs[j] + ((x.qs[j] >> 4) - 8) * y.qs[j + kQK / 2];
    }
    sum += static_cast<float>(sumi) * fp16_to_fp32(x.d) * fp16_to_fp32(y.d);
  }
  return sum;
}

float dot_q4_1(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ4_1>(w, i);
    const auto y = load_block<BlockQ8_1>(a, i);
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += (x.qs[j] & 0xF) * y.qs[j] + (x.qs[j] >> 4) * y.qs[j + kQK / 2];
    }
    sum += (fp16_to_fp32(x.d) * fp16_to_fp32(y.d)) * static_cast<float>(sumi) +
           fp16_to_fp32(x.m) * fp16_to_fp32(y.s);
  }
  return sum;
}

namespace {
inline void unpack_q5(const uint8_t* qh, const uint8_t* qs, int offset, int* q) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = ((qs[j] & 0xF) | static_cast<int>(((h >> j) & 1u) << 4)) - offset;
    q[j + kQK / 2] = ((qs[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4)) - offset;
  }
}
}  // namespace

float dot_q5_0(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  int q[kQK];
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ5_0>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    unpack_q5(x.qh, x.qs, 16, q);
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += q[j] * y.qs[j];
    sum += static_cast<float>(sumi) * fp16_to_fp32(x.d) * fp16_to_fp32(y.d);
  }
  return sum;
}

float dot_q5_1(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  int q[kQK];
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ5_1>(w, i);
    const auto y = load_block<BlockQ8_1>(a, i);
    unpack_q5(x.qh, x.qs, 0, q);
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += q[j] * y.qs[j];
    sum += (fp16_to_fp32(x.d) * fp16_to_fp32(y.d)) * static_cast<float>(sumi) +
           fp16_to_fp32(x.m) * fp16_to_fp32(y.s);
  }
  return sum;
}

float dot_q8_0(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockQ8_0>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += x.qs[j] * y.qs[j];
    sum += static_cast<float>(sumi) * fp16_to_fp32(x.d) * fp16_to_fp32(y.d);
  }
  return sum;
}

float dot_iq4_nl(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockIQ4_NL>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi +=
          kValuesIQ4NL[x.qs[j] & 0xF] * y.qs[j] + kValuesIQ4NL[x.qs[j] >> 4] * y.qs[j + kQK / 2];
    }
    sum += (fp16_to_fp32(x.d) * fp16_to_fp32(y.d)) * static_cast<float>(sumi);
  }
  return sum;
}

float dot_mxfp4(const uint8_t* w, const uint8_t* a, size_t nb) {
  float sum = 0.0f;
  for (size_t i = 0; i < nb; ++i) {
    const auto x = load_block<BlockMXFP4>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi +=
          kValuesMXFP4[x.qs[j] & 0xF] * y.qs[j] + kValuesMXFP4[x.qs[j] >> 4] * y.qs[j + kQK / 2];
    }
    sum += (fp16_to_fp32(y.d) * e8m0_to_fp32_half(x.e)) * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace geniex::quant::detail
