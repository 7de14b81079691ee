// Packed on-disk block layouts of the ggml quantized types (shared/spec/GGUF.md §4).
// Every struct is trivially copyable and exactly `type_size` bytes, so a block is read with
// one memcpy from a possibly unaligned byte stream. Multi-byte fields are little-endian.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace geniex::quant {

static_assert(std::endian::native == std::endian::little,
              "quant blocks assume a little-endian host");

inline constexpr int kQK = 32;     ///< elements per legacy block (Q4_0 ... Q8_1, IQ4_NL, MXFP4)
inline constexpr int kQK_K = 256;  ///< elements per K-quant super-block
inline constexpr int kKScaleSize = 12;

struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};

struct BlockQ4_1 {
  uint16_t d;  // f16
  uint16_t m;  // f16
  uint8_t qs[kQK / 2];
};

struct BlockQ5_0 {
  uint16_t d;  // f16
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

struct BlockQ5_1 {
  uint16_t d;  // f16
  uint16_t m;  // f16
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};

struct BlockQ8_1 {
  uint16_t d;  // f16
  uint16_t s;  // f16: d * sum(qs)
  int8_t qs[kQK];
};

struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // low nibble scale, high nibble min
  uint8_t qs[kQK_K / 4];
  uint16_t d;     // f16
  uint16_t dmin;  // f16
};

struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kKScaleSize];
  uint16_t d;  // f16
};

struct BlockQ4_K {
  uint16_t d;     // f16
  uint16_t dmin;  // f16
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};

struct BlockQ5_K {
  uint16_t d;     // f16
  uint16_t dmin;  // f16
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;  // f16
};

struct BlockQ8_K {
  float d;  // f32 (may be negative)
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

struct BlockIQ4_NL {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};

struct BlockIQ4_XS {
  uint16_t d;  // f16
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

struct BlockMXFP4 {
  uint8_t e;  // E8M0
  uint8_t qs[kQK / 2];
};

#define GENIEX_CHECK_BLOCK(T, size)                             \
  static_assert(sizeof(T) == (size), #T " has the wrong size"); \
  static_assert(std::is_trivially_copyable_v<T>, #T " must be trivially copyable")
GENIEX_CHECK_BLOCK(BlockQ4_0, 18);
GENIEX_CHECK_BLOCK(BlockQ4_1, 20);
GENIEX_CHECK_BLOCK(BlockQ5_0, 22);
GENIEX_CHECK_BLOCK(BlockQ5_1, 24);
GENIEX_CHECK_BLOCK(BlockQ8_0, 34);
GENIEX_CHECK_BLOCK(BlockQ8_1, 36);
GENIEX_CHECK_BLOCK(BlockQ2_K, 84);
GENIEX_CHECK_BLOCK(BlockQ3_K, 110);
GENIEX_CHECK_BLOCK(BlockQ4_K, 144);
GENIEX_CHECK_BLOCK(BlockQ5_K, 176);
GENIEX_CHECK_BLOCK(BlockQ6_K, 210);
GENIEX_CHECK_BLOCK(BlockQ8_K, 292);
GENIEX_CHECK_BLOCK(BlockIQ4_NL, 18);
GENIEX_CHECK_BLOCK(BlockIQ4_XS, 136);
GENIEX_CHECK_BLOCK(BlockMXFP4, 17);
#undef GENIEX_CHECK_BLOCK

/// IQ4_NL / IQ4_XS non-linear codebook.
inline constexpr int8_t kValuesIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

/// MXFP4 E2M1 values, doubled (paired with the "half" E8M0 scale).
inline constexpr int8_t kValuesMXFP4[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

/// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block.
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = static_cast<uint8_t>(q[j] & 63);
    *mn = static_cast<uint8_t>(q[j + 4] & 63);
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/// Unpacks the 16 signed 6-bit scales (-32..31) of a Q3_K block.
inline void unpack_q3k_scales(const uint8_t* b, int8_t* s) {
  for (int i = 0; i < 16; ++i) {
    const int low4 = i < 8 ? (b[i] & 0xF) : (b[i - 8] >> 4);
    const int high2 = (b[8 + (i % 4)] >> (2 * (i / 4))) & 3;
    s[i] = static_cast<int8_t>((low4 | (high2 << 4)) - 32);
  }
}

/// IQ4_XS sub-block scale (0..63, stored with a +32 bias).
inline int iq4xs_scale(const BlockIQ4_XS& b, int ib) {
  return ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b.scales_h >> (2 * ib)) & 3) << 4);
}

/// MXFP4 scale: 2^(e-128) (half of the E8M0 value, matching the doubled codebook), exact.
inline float e8m0_to_fp32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  return std::bit_cast<float>(bits);
}

}  // namespace geniex::quant
