// Helpers shared by the quant unit tests: deterministic random rows and blocks.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/fp16.h"
#include "quant/quant.h"

namespace geniex {
/// Test parameters print as the type name ("Q4_K") instead of raw bytes.
inline void PrintTo(GgmlType t, std::ostream* os) { *os << ggml_type_name(t); }
}  // namespace geniex

namespace geniex::quant::testing {

inline std::vector<float> gaussian(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline size_t row_bytes(GgmlType t, size_t n) { return static_cast<size_t>(*ggml_row_bytes(t, n)); }

/// `rows` rows of `k` Gaussian values (standard deviation `sigma`) quantized row by row as `t`
/// (a type quant::can_quantize accepts); empty if a row fails to quantize.
inline std::vector<uint8_t> gaussian_rows(GgmlType t, size_t k, size_t rows, float sigma,
                                          uint32_t seed) {
  const size_t row = row_bytes(t, k);
  const auto f = gaussian(k * rows, sigma, seed);
  std::vector<uint8_t> out(row * rows);
  for (size_t r = 0; r < rows; ++r) {
    const std::span<const float> src(f.data() + r * k, k);
    if (!quantize_row(t, src, std::span<uint8_t>(out.data() + r * row, row)).ok()) return {};
  }
  return out;
}

/// Byte offsets of the f16 scale fields in one block of `t` (for random-but-finite blocks).
inline std::vector<size_t> f16_fields(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ5_0:
    case GgmlType::kQ8_0:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ4_XS: return {0};
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: return {0, 2};
    case GgmlType::kQ2_K: return {80, 82};
    case GgmlType::kQ3_K: return {108};
    case GgmlType::kQ6_K: return {208};
    default: return {};
  }
}

/// Random blocks of `t` whose f16 scales are finite values of magnitude about `scale`.
inline std::vector<uint8_t> random_blocks(GgmlType t, size_t nblocks, float scale, uint32_t seed) {
  const auto& tr = traits(t);
  std::mt19937 rng(seed);
  std::vector<uint8_t> data(nblocks * tr.type_size);
  for (auto& b : data) b = static_cast<uint8_t>(rng() & 0xFF);
  std::uniform_real_distribution<float> u(0.25f, 1.0f);
  for (size_t i = 0; i < nblocks; ++i) {
    for (size_t off : f16_fields(t)) {
      const uint16_t h = fp32_to_fp16(scale * u(rng));
      std::memcpy(&data[i * tr.type_size + off], &h, 2);
    }
    if (t == GgmlType::kMXFP4) data[i * tr.type_size] = static_cast<uint8_t>(120 + rng() % 10);
  }
  return data;
}

}  // namespace geniex::quant::testing
