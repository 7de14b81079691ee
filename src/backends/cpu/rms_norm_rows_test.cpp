// cpu::rms_norm_rows against graph::ref::rms_norm bit for bit: row counts around its 4-row groups,
// odd lengths, with and without a weight, large, tiny, infinite and NaN inputs, 1 and 3 threads.
// (The backend's RmsNorm / RoPE ops against graph::run_reference: tests/conformance.)
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

TEST(CpuRmsNorm, RowsMatchTheReferenceBitForBit) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 3, 64, 255, 640, 2048}) {
      for (int64_t rows : {1, 2, 3, 4, 5, 7, 8, 9, 33}) {
        std::vector<float> x(static_cast<size_t>(n * rows)), w(static_cast<size_t>(n));
        for (auto& v : x) v = nd(rng) * std::exp2(static_cast<float>(rng() % 40) - 20.0f);
        for (auto& v : w) v = nd(rng);
        if (rows > 2) {
          x[static_cast<size_t>(n)] = std::numeric_limits<float>::infinity();       // row 1
          x[static_cast<size_t>(2 * n)] = std::numeric_limits<float>::quiet_NaN();  // row 2
        }
        for (bool weighted : {false, true}) {
          std::vector<float> want(x.size()), got(x.size(), -1.0f);
          ASSERT_TRUE(graph::ref::rms_norm(
                          x, weighted ? std::span<const float>(w) : std::span<const float>(), n,
                          1e-6f, want)
                          .ok());
          cpu::rms_norm_rows(pool, x.data(), weighted ? w.data() : nullptr, n, rows, 1e-6f,
                             got.data());
          for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_TRUE(same_bits(got[i], want[i]) || (std::isnan(got[i]) && std::isnan(want[i])))
                << "n=" << n << " rows=" << rows << " weighted=" << weighted << " i=" << i << ": "
                << got[i] << " vs " << want[i];
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace geniex::backends
