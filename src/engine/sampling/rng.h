// Pcg32: the sampler's random source, bit-identical on every platform and standard library.
// PCG-XSH-RR 64/32 exactly as the reference pcg32_random_r / pcg32_srandom_r (pcg-random.org),
// plus our own conversions to uniform numbers, so no std:: distribution (whose algorithms
// differ between libstdc++, libc++ and MSVC) ever decides a sample.
#pragma once

#include <cstdint>

namespace geniex::sampling {

class Pcg32 {
 public:
  /// Stream used when only a seed is given (any odd-after-shift constant works; this one is
  /// the reference's PCG32_INITIALIZER increment).
  static constexpr uint64_t kDefaultStream = 0xda3e39cb94b95bdbULL >> 1;

  explicit Pcg32(uint64_t seed = 0, uint64_t stream = kDefaultStream) { seed_with(seed, stream); }

  /// pcg32_srandom_r(initstate = seed, initseq = stream).
  void seed_with(uint64_t seed, uint64_t stream = kDefaultStream) {
    state_ = 0;
    inc_ = (stream << 1u) | 1u;
    next_u32();
    state_ += seed;
    next_u32();
  }

  /// pcg32_random_r: the next 32 uniformly distributed bits.
  uint32_t next_u32() {
    const uint64_t old = state_;
    state_ = old * kMultiplier + inc_;
    const auto xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    const auto rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
  }

  /// A double uniform on [0, 1) with 53 random bits: the top 32 bits come from the first
  /// draw, the low 21 from the top of the second. Every result is exact (k * 2^-53).
  double next_unit_double() {
    const uint64_t hi = next_u32();
    const uint64_t lo = next_u32() >> 11u;
    return static_cast<double>((hi << 21u) | lo) * 0x1p-53;
  }

  /// An integer uniform on [0, bound) without modulo bias (Lemire's method with rejection);
  /// bound 0 gives 0. Used by tests to generate platform-independent random data.
  uint32_t next_below(uint32_t bound) {
    if (bound == 0) return 0;
    uint64_t m = static_cast<uint64_t>(next_u32()) * bound;
    auto low = static_cast<uint32_t>(m);
    if (low < bound) {
      const uint32_t threshold = (0u - bound) % bound;
      while (low < threshold) {
        m = static_cast<uint64_t>(next_u32()) * bound;
        low = static_cast<uint32_t>(m);
      }
    }
    return static_cast<uint32_t>(m >> 32u);
  }

 private:
  static constexpr uint64_t kMultiplier = 6364136223846793005ULL;
  uint64_t state_ = 0;
  uint64_t inc_ = 1;
};

}  // namespace geniex::sampling
