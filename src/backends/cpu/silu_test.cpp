// kernels/exp_simd.h (every SIMD version this binary has and this CPU runs, plus exp_poly) against
// double-precision std::exp, and cpu::silu_rows for every ISA against graph::ref::silu / glu.
//
// Bounds:
// * exp: <= 2 ULP of the correctly rounded float's binade for x in [kExpMinX, kExpMaxX] (dense
//   sweep every 1e-3 over [-88, 89], the range ends, 2^20 random bit patterns); +inf above,
//   exactly +0 below (the documented flush), NaN for NaN.
// * silu: <= 2 ULP from ref::silu (float ordering distance), swiglu: <= 3 ULP from ref::glu;
//   for x < -kExpMaxX (~-88.72: e^-x = +inf) y is a signed zero, the reference below 3e-37 |up|.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/kernels/exp_simd.h"
#include "backends/cpu/kernels/isa.h"
#include "graph/ref_ops.h"

namespace geniex::backends::cpu {
namespace {

using ::geniex::cpu::Isa;
using ::geniex::cpu::kExpMaxX;
using ::geniex::cpu::kExpMinX;

constexpr double kExpUlp = 2.0;
constexpr int64_t kSiluUlp = 2;
constexpr int64_t kSwigluUlp = 3;
constexpr float kFlushed = 3e-37f;

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void exp_array_avx2(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    float b[8] = {};
    for (size_t l = 0; l < 8 && i + l < n; ++l) b[l] = x[i + l];
    _mm256_storeu_ps(b, ::geniex::cpu::exp_avx2(_mm256_loadu_ps(b)));
    for (size_t l = 0; l < 8 && i + l < n; ++l) y[i + l] = b[l];
  }
}
__attribute__((target("avx512f"))) void exp_array_avx512(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    float b[16] = {};
    for (size_t l = 0; l < 16 && i + l < n; ++l) b[l] = x[i + l];
    _mm512_storeu_ps(b, ::geniex::cpu::exp_avx512(_mm512_loadu_ps(b)));
    for (size_t l = 0; l < 16 && i + l < n; ++l) y[i + l] = b[l];
  }
}
#endif
#if defined(__aarch64__)
void exp_array_neon(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; i += 4) {
    float b[4] = {};
    for (size_t l = 0; l < 4 && i + l < n; ++l) b[l] = x[i + l];
    vst1q_f32(b, ::geniex::cpu::exp_neon(vld1q_f32(b)));
    for (size_t l = 0; l < 4 && i + l < n; ++l) y[i + l] = b[l];
  }
}
#endif

using ExpFn = void (*)(const float*, float*, size_t);

void exp_array_scalar(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = ::geniex::cpu::exp_poly(x[i]);
}

struct ExpImpl {
  std::string name;
  ExpFn fn;
};

// Every exp version runnable here.
std::vector<ExpImpl> exp_impls() {
  std::vector<ExpImpl> v = {{"scalar", exp_array_scalar}};
#if defined(__x86_64__)
  if (::geniex::cpu::isa_available(Isa::kAvx2)) v.push_back({"avx2", exp_array_avx2});
  if (::geniex::cpu::isa_available(Isa::kAvx512)) v.push_back({"avx512", exp_array_avx512});
#endif
#if defined(__aarch64__)
  v.push_back({"neon", exp_array_neon});
#endif
  return v;
}

// |got - e^x| in ULPs of the binade of the float nearest e^x (normal range only).
double exp_ulp_error(float x, float got) {
  const double want = std::exp(static_cast<double>(x));
  const int ex = std::ilogb(static_cast<float>(want));
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, ex - 23);
}

// Checks every input; returns the largest in-range ULP error.
double check_exp(const ExpImpl& impl, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  impl.fn(x.data(), y.data(), x.size());
  double worst = 0.0;
  int failures = 0;
  for (size_t i = 0; i < x.size() && failures < 10; ++i) {
    const float v = x[i], g = y[i];
    bool ok;
    if (std::isnan(v)) {
      ok = std::isnan(g);
    } else if (v > kExpMaxX) {
      ok = g == std::numeric_limits<float>::infinity();
    } else if (v < kExpMinX) {
      ok = g == 0.0f && !std::signbit(g);
    } else {
      const double err = exp_ulp_error(v, g);
      worst = std::max(worst, err);
      ok = err <= kExpUlp && std::isfinite(g) && g >= FLT_MIN;
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << impl.name << ": exp(" << v << " = 0x" << std::hex
                    << std::bit_cast<uint32_t>(v) << std::dec << ") = " << g << ", want "
                    << std::exp(static_cast<double>(v));
    }
  }
  return worst;
}

TEST(ExpSimd, DenseSweepWithin2Ulp) {
  std::vector<float> x;
  for (int64_t k = -88000; k <= 89000; ++k) x.push_back(static_cast<float>(k) * 1e-3f);
  for (const auto& impl : exp_impls()) {
    const double worst = check_exp(impl, x);
    std::printf("exp %s: max %.3f ULP over the sweep\n", impl.name.c_str(), worst);
  }
}

TEST(ExpSimd, RangeEndsAndSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.0f,
                          -0.0f,
                          inf,
                          -inf,
                          nan,
                          -nan,
                          100.0f,
                          -100.0f,
                          FLT_MAX,
                          -FLT_MAX,
                          FLT_MIN,
                          -FLT_MIN,
                          1e-40f,
                          -1e-40f,
                          kExpMaxX,
                          kExpMinX,
                          0.5f * std::log(2.0f),
                          -0.5f * std::log(2.0f)};
  // A few hundred floats either side of each end of the range.
  for (float end : {kExpMaxX, kExpMinX}) {
    float up = end, down = end;
    for (int k = 0; k < 300; ++k) {
      up = std::nextafter(up, inf);
      down = std::nextafter(down, -inf);
      x.push_back(up);
      x.push_back(down);
    }
  }
  for (const auto& impl : exp_impls()) {
    check_exp(impl, x);
    std::vector<float> y(x.size());
    impl.fn(x.data(), y.data(), x.size());
    EXPECT_EQ(y[0], 1.0f) << impl.name;
    EXPECT_EQ(y[1], 1.0f) << impl.name;
    EXPECT_EQ(y[2], inf) << impl.name;
    EXPECT_EQ(y[3], 0.0f) << impl.name;
    EXPECT_TRUE(std::isnan(y[4]) && std::isnan(y[5])) << impl.name;
    EXPECT_EQ(y[6], inf) << impl.name;
    EXPECT_EQ(y[7], 0.0f) << impl.name;
    EXPECT_EQ(y[12], 1.0f) << impl.name;
    EXPECT_EQ(y[13], 1.0f) << impl.name;
    EXPECT_TRUE(std::isfinite(y[14]) && y[14] > 3.4e38f) << impl.name;
    EXPECT_GE(y[15], FLT_MIN) << impl.name;
  }
}

TEST(ExpSimd, RandomBitPatterns) {
  std::mt19937 rng(7);
  std::vector<float> x(1 << 20);
  for (auto& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  // And uniformly over the range, where random bit patterns are rare.
  std::uniform_real_distribution<float> in_range(kExpMinX, kExpMaxX);
  for (int k = 0; k < (1 << 20); ++k) x.push_back(in_range(rng));
  for (const auto& impl : exp_impls()) {
    const double worst = check_exp(impl, x);
    std::printf("exp %s: max %.3f ULP over random inputs\n", impl.name.c_str(), worst);
  }
}

// Distance between two floats in ULPs (count of floats between them; +0 and -0 are 0 apart).
int64_t ulp_distance(float a, float b) {
  auto key = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  const int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

// One output element against the reference. For x < -kExpMaxX, e^-x is +inf and y is a signed
// zero where the reference has |silu(x)| < 3e-37 (times |up|).
bool same_or_close(float x, float up, float got, float want, int64_t ulps) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (x < -kExpMaxX) return got == 0.0f && std::fabs(want) <= kFlushed * std::fabs(up);
  return std::isfinite(got) && ulp_distance(got, want) <= ulps;
}

std::vector<float> silu_inputs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> narrow(-12.0f, 12.0f), wide(-120.0f, 120.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = (i % 5 == 4) ? wide(rng) : narrow(rng);
  return x;
}

// silu_rows_isa(isa) for x (and up when non-empty) against the reference; also checks that
// nothing past n is written. Returns the largest ULP distance seen.
int64_t check_silu(Isa isa, const std::vector<float>& x, const std::vector<float>& up) {
  const size_t n = x.size();
  std::vector<float> want(n);
  if (up.empty()) {
    EXPECT_TRUE(graph::ref::unary(graph::OpKind::kSilu, x, 0.0f, want).ok());
  } else {
    EXPECT_TRUE(graph::ref::glu(graph::GluActivation::kSilu, x, up, want).ok());
  }
  constexpr float kSentinel = 12345.0f;
  std::vector<float> y(n + 17, kSentinel);
  silu_rows_isa(isa, x.data(), up.empty() ? nullptr : up.data(), y.data(), static_cast<int64_t>(n));
  const int64_t tol = up.empty() ? kSiluUlp : kSwigluUlp;
  const std::string what = std::string(::geniex::cpu::isa_name(isa)) +
                           (up.empty() ? " silu" : " swiglu") + " n=" + std::to_string(n);
  int64_t worst = 0;
  int failures = 0;
  for (size_t i = 0; i < n && failures < 10; ++i) {
    const float u = up.empty() ? 1.0f : up[i];
    if (!same_or_close(x[i], u, y[i], want[i], tol)) {
      ++failures;
      ADD_FAILURE() << what << " at " << i << ": x " << x[i] << " got " << y[i] << " want "
                    << want[i];
    }
    if (std::isfinite(want[i]) && x[i] >= -kExpMaxX) {
      worst = std::max(worst, ulp_distance(y[i], want[i]));
    }
  }
  for (size_t i = n; i < y.size(); ++i) {
    EXPECT_EQ(y[i], kSentinel) << what << ": wrote past the end at " << i;
  }
  return worst;
}

TEST(SiluRows, OddLengthsEveryIsa) {
  for (Isa isa : ::geniex::cpu::available_isas()) {
    int64_t worst = 0, worst_up = 0;
    for (size_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 100003}) {
      const auto x = silu_inputs(n, static_cast<uint32_t>(n) + 1);
      const auto up = silu_inputs(n, static_cast<uint32_t>(n) + 1000);
      worst = std::max(worst, check_silu(isa, x, {}));
      worst_up = std::max(worst_up, check_silu(isa, x, up));
    }
    std::printf("silu %s: max %lld ULP, swiglu max %lld ULP\n",
                std::string(::geniex::cpu::isa_name(isa)).c_str(), static_cast<long long>(worst),
                static_cast<long long>(worst_up));
  }
}

TEST(SiluRows, SpecialInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f,   -0.0f,   inf,      -inf,   nan,    100.0f,  -100.0f,
                                88.8f,  -88.8f,  87.0f,    -87.0f, 1e-40f, -1e-40f, 20.0f,
                                -20.0f, FLT_MAX, -FLT_MAX, 0.25f,  -0.25f, 1.0f,    -1.0f};
  const std::vector<float> up(x.size(), 1.5f);
  for (Isa isa : ::geniex::cpu::available_isas()) {
    check_silu(isa, x, {});
    check_silu(isa, x, up);
    std::vector<float> y(x.size());
    silu_rows_isa(isa, x.data(), nullptr, y.data(), static_cast<int64_t>(x.size()));
    const std::string name(::geniex::cpu::isa_name(isa));
    EXPECT_TRUE(y[0] == 0.0f && !std::signbit(y[0])) << name;
    EXPECT_TRUE(y[1] == 0.0f && std::signbit(y[1])) << name;
    EXPECT_EQ(y[2], inf) << name;
    EXPECT_TRUE(std::isnan(y[3])) << name << ": -inf / (1 + inf), as ref::silu and x*sigmoid(x)";
    EXPECT_TRUE(std::isnan(y[4])) << name;
    EXPECT_EQ(y[5], 100.0f) << name;
    EXPECT_EQ(y[6], 0.0f) << name;
    EXPECT_EQ(y[15], FLT_MAX) << name;
  }
}

TEST(SiluRows, InPlace) {
  const auto x = silu_inputs(1001, 5);
  const auto up = silu_inputs(1001, 6);
  std::vector<float> want(x.size());
  ASSERT_TRUE(graph::ref::glu(graph::GluActivation::kSilu, x, up, want).ok());
  for (Isa isa : ::geniex::cpu::available_isas()) {
    std::vector<float> y = x;
    silu_rows_isa(isa, y.data(), up.data(), y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_TRUE(same_or_close(x[i], up[i], y[i], want[i], kSwigluUlp))
          << ::geniex::cpu::isa_name(isa) << " at " << i;
    }
  }
}

}  // namespace
}  // namespace geniex::backends::cpu
