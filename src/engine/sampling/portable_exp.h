// portable_exp: e^x computed with IEEE +, -, *, / and exact scaling only, so it returns the
// same bits on every platform and libm (std::exp may differ by an ulp between glibc versions,
// musl, Apple and aarch64 builds, which would change which token a seeded sampler draws).
#pragma once

namespace geniex::sampling {

/// e^x for any double x, within ~2 ulp of the true value; 0 for x below about -745 (and for
/// -inf), +inf above about 709.78, NaN for NaN.
double portable_exp(double x);

}  // namespace geniex::sampling
