// Reference quantizers for the scalar and 32-element block types.
// F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 reproduce gguf-py's numpy quantizers byte for byte
// (same f32 operations in the same order, same first-index tie rule for the max |x| element,
// same truncate-then-cast rounding). Q8_1 is the activation format for Q4_1 / Q5_1 dots.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {
namespace {

// numpy's float32 -> (u)int8 cast as it behaves on x86-64: convert through int64 (out-of-range
// and NaN give INT64_MIN), keep the low byte. Only reachable with degenerate inputs (a scale so
// small that 1/d overflows), but it keeps even those memory-safe and deterministic.
inline uint8_t np_cast_u8(float v) {
  constexpr float kLim = 9223372036854775808.0f;  // 2^63
  const int64_t i = (v >= -kLim && v < kLim) ? static_cast<int64_t>(v) : INT64_MIN;
  return static_cast<uint8_t>(static_cast<uint64_t>(i) & 0xFFu);
}

// The element with the largest |x| (first one on ties), with its sign, as numpy's
// take_along_axis(x, abs(x).argmax()) gives it.
inline float signed_absmax(const float* x, int n) {
  float amax = std::fabs(x[0]);
  float max = x[0];
  for (int j = 1; j < n; ++j) {
    const float a = std::fabs(x[j]);
    if (a > amax) {
      amax = a;
      max = x[j];
    }
  }
  return max;
}

// Block min and max as numpy's min()/max() reductions give them. On ties the later element
// wins, which only shows for signed zeros (a block whose min is 0 with both -0 and +0 present).
inline void min_max(const float* x, int n, float* mn, float* mx) {
  float lo = x[0];
  float hi = x[0];
  for (int j = 1; j < n; ++j) {
    if (x[j] <= lo) lo = x[j];
    if (x[j] >= hi) hi = x[j];
  }
  *mn = lo;
  *mx = hi;
}

inline float inverse_or_zero(float d) { return d == 0.0f ? 0.0f : 1.0f / d; }

inline uint8_t clip_max(uint8_t q, uint8_t hi) { return q > hi ? hi : q; }

}  // namespace

void quantize_f32(const float* src, uint8_t* dst, size_t nb) { std::memcpy(dst, src, nb * 4); }

void quantize_f16(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void quantize_bf16(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const uint16_t h = fp32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void quantize_q4_0(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    const float max = signed_absmax(x, kQK);
    const float d = max / -8.0f;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = clip_max(np_cast_u8(std::trunc(x[j] * id + 8.5f)), 15);
    BlockQ4_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) b.qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
    store_block(dst, i, b);
  }
}

void quantize_q4_1(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    float mn, mx;
    min_max(x, kQK, &mn, &mx);
    const float d = (mx - mn) / 15.0f;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) {
      q[j] = clip_max(np_cast_u8(std::trunc((x[j] - mn) * id + 0.5f)), 15);
    }
    BlockQ4_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(mn);
    for (int j = 0; j < kQK / 2; ++j) b.qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
    store_block(dst, i, b);
  }
}

namespace {
// Packs 32 five-bit quants into qs (low nibbles) and qh (bit 4 of element i at bit i).
inline void pack_q5(const uint8_t* q, uint8_t* qh, uint8_t* qs) {
  uint32_t h = 0;
  for (int j = 0; j < kQK; ++j) h |= static_cast<uint32_t>((q[j] >> 4) != 0) << j;
  std::memcpy(qh, &h, 4);
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | (q[j + kQK / 2] << 4));
  }
}
}  // namespace

void quantize_q5_0(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    const float max = signed_absmax(x, kQK);
    const float d = max / -16.0f;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = clip_max(np_cast_u8(std::trunc(x[j] * id + 16.5f)), 31);
    BlockQ5_0 b;
    b.d = fp32_to_fp16(d);
    pack_q5(q, b.qh, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q5_1(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    float mn, mx;
    min_max(x, kQK, &mn, &mx);
    const float d = (mx - mn) / 31.0f;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) {
      q[j] = clip_max(np_cast_u8(std::trunc((x[j] - mn) * id + 0.5f)), 31);
    }
    BlockQ5_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(mn);
    pack_q5(q, b.qh, b.qs);
    store_block(dst, i, b);
  }
}

namespace {
// Symmetric 8-bit quantization of one 32-element block: d = max|x| / 127, q = round-half-away(x/d).
inline float quantize_block_q8(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = inverse_or_zero(d);
  for (int j = 0; j < kQK; ++j) qs[j] = static_cast<int8_t>(np_cast_u8(std::round(x[j] * id)));
  return d;
}
}  // namespace

void quantize_q8_0(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    BlockQ8_0 b;
    const float d = quantize_block_q8(src + i * kQK, b.qs);
    b.d = fp32_to_fp16(d);
    store_block(dst, i, b);
  }
}

void quantize_q8_1(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    BlockQ8_1 b;
    const float d = quantize_block_q8(src + i * kQK, b.qs);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += b.qs[j];
    b.d = fp32_to_fp16(d);
    b.s = fp32_to_fp16(static_cast<float>(sum) * d);
    store_block(dst, i, b);
  }
}

}  // namespace geniex::quant::detail
