#include "engine/sampling/portable_exp.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace geniex::sampling {
namespace {

// 2^(j/32), j = 0..31, correctly rounded (computed with 60-digit decimal arithmetic).
constexpr double kExp2Table[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};
constexpr double kInvLn2x32 = 0x1.71547652b82fep+5;  // 32 / ln2
// ln2 / 32 split so that k * kLn2Over32Hi is exact for |k| < 2^20.
constexpr double kLn2Over32Hi = 0x1.62e42fef00000p-6;
constexpr double kLn2Over32Lo = 0x1.473de6af278edp-39;

}  // namespace

double portable_exp(double x) {
  // x = (32e + j) * ln2/32 + r with |r| <= ln2/64; e^x = 2^e * 2^(j/32) * e^r, e^r by its
  // degree-6 Taylor polynomial (truncation < 4e-18 relative). With -ffp-contract=off every
  // step is a correctly rounded IEEE operation or exact, so the bits are the same everywhere.
  if (std::isnan(x)) return x;
  if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
  if (x < -745.2) return 0.0;
  // Nearest integer by truncation (cheaper than a floor() call without SSE4.1; |t| < 2^16).
  const double t = x * kInvLn2x32;
  const auto k = static_cast<int32_t>(t < 0.0 ? t - 0.5 : t + 0.5);
  const auto kd = static_cast<double>(k);
  const double r = (x - kd * kLn2Over32Hi) - kd * kLn2Over32Lo;
  double p = 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int32_t e = k >> 5;  // floor(k / 32): arithmetic shift (defined in C++20)
  const double v = kExp2Table[k & 31] * p;
  if (e >= -1022 && e <= 1023) {
    return v * std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52);  // exact
  }
  return std::ldexp(v, e);  // near the ends of the range: one correctly rounded scaling
}

}  // namespace geniex::sampling
