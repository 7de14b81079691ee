// cpu::layer_norm_rows and cpu::gelu_erf_rows against graph::ref::layer_norm / ref::gelu_erf bit
// for bit: row counts around the 4-row groups, SigLIP2's and the test models' widths, with and
// without weight and bias, a large common offset, infinite and NaN inputs, 1 and 3 threads.
// (The backend's LayerNorm / GeluErf ops against graph::run_reference: tests/conformance.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/thread_pool.h"
#include "graph/ref_ops.h"

namespace geniex::backends {
namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(CpuLayerNorm, RowsMatchTheReferenceBitForBit) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 3, 32, 128, 255, 768, 1152, 4608}) {
      for (int64_t rows : {1, 3, 4, 5, 9}) {
        std::vector<float> x(static_cast<size_t>(n * rows)), w(static_cast<size_t>(n)),
            b(static_cast<size_t>(n));
        for (auto& v : x) v = nd(rng) + 50.0f;  // an offset: the variance pass must subtract it
        for (auto& v : w) v = nd(rng);
        for (auto& v : b) v = nd(rng);
        if (rows > 2) {
          x[static_cast<size_t>(n)] = std::numeric_limits<float>::infinity();       // row 1
          x[static_cast<size_t>(2 * n)] = std::numeric_limits<float>::quiet_NaN();  // row 2
        }
        for (int mode = 0; mode < 3; ++mode) {  // no weight, weight, weight and bias
          const std::span<const float> ws =
              mode >= 1 ? std::span<const float>(w) : std::span<const float>();
          const std::span<const float> bs =
              mode == 2 ? std::span<const float>(b) : std::span<const float>();
          std::vector<float> want(x.size()), got(x.size(), -1.0f);
          ASSERT_TRUE(graph::ref::layer_norm(x, ws, bs, n, 1e-6f, want).ok());
          cpu::layer_norm_rows(pool, x.data(), mode >= 1 ? w.data() : nullptr,
                               mode == 2 ? b.data() : nullptr, n, rows, 1e-6f, got.data());
          for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_TRUE(same_bits(got[i], want[i]) || (std::isnan(got[i]) && std::isnan(want[i])))
                << "n=" << n << " rows=" << rows << " mode=" << mode << " i=" << i << ": " << got[i]
                << " vs " << want[i];
          }
        }
      }
    }
  }
}

TEST(CpuGeluErf, MatchesTheReferenceBitForBitAndAliases) {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> x(10007);
  for (auto& v : x) v = nd(rng);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = std::numeric_limits<float>::infinity();
  x[3] = -std::numeric_limits<float>::infinity();
  x[4] = -20.0f;
  x[5] = std::numeric_limits<float>::denorm_min();
  std::vector<float> got(x.size()), want(x.size());
  cpu::gelu_erf_rows(x.data(), got.data(), static_cast<int64_t>(x.size()));
  ASSERT_TRUE(graph::ref::unary(graph::OpKind::kGeluErf, x, 1.0f, want).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(same_bits(got[i], want[i]) || (std::isnan(got[i]) && std::isnan(want[i])))
        << x[i] << ": " << got[i] << " vs " << want[i];
  }
  EXPECT_EQ(got[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[4], -0.0f);  // underflows, keeps the sign
  std::vector<float> inplace = x;
  cpu::gelu_erf_rows(inplace.data(), inplace.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(std::memcmp(inplace.data(), got.data(), x.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace geniex::backends
