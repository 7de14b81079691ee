// Random weight matrices for the kernel benchmarks: normal rows quantized one at a time.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "quant/quant.h"

namespace geniex::bench {

/// `rows` rows of `k` N(0, 1) values quantized to `type`, `row_bytes` each; empty on failure.
inline std::vector<uint8_t> random_rows(GgmlType type, int64_t rows, int64_t k, size_t row_bytes,
                                        std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : x) v = nd(rng);
    const std::span<uint8_t> dst(w.data() + static_cast<size_t>(r) * row_bytes, row_bytes);
    if (!quant::quantize_row(type, x, dst).ok()) return {};
  }
  return w;
}

}  // namespace geniex::bench
