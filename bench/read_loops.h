// The read loops of the decode bound (stream_bandwidth), shared with gemv_memory so both time the
// same code: tuned_sum (one linear stream, 32-byte loads into 4 accumulators, optional software
// prefetch) and streams_sum (4 parts read in lockstep, 256 bytes of each in turn).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace geniex::bench {

typedef int64_t v4i64 __attribute__((vector_size(32)));

// Adds the 16 int64 at q to the 4 vector accumulators (four 32-byte loads).
__attribute__((always_inline)) inline void add16(const int64_t* q, v4i64& s0, v4i64& s1, v4i64& s2,
                                                 v4i64& s3) {
  v4i64 x0, x1, x2, x3;
  std::memcpy(&x0, q, 32);
  std::memcpy(&x1, q + 4, 32);
  std::memcpy(&x2, q + 8, 32);
  std::memcpy(&x3, q + 12, 32);
  s0 += x0;
  s1 += x1;
  s2 += x2;
  s3 += x3;
}

// Sum of p[lo, hi) with 4 vector accumulators (16 int64 per iteration) and a prefetch
// `ahead` bytes in front of the loads (0: none).
__attribute__((always_inline)) inline int64_t tuned_sum_body(const int64_t* p, size_t lo, size_t hi,
                                                             size_t ahead) {
  v4i64 s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
  size_t i = lo;
  const size_t step = 16;
  const size_t ahead_elems = ahead / sizeof(int64_t);
  for (; i + step <= hi; i += step) {
    if (ahead_elems) {
      // One prefetch per 64-byte line: 2 lines per iteration of 128 bytes.
      __builtin_prefetch(p + i + ahead_elems, 0, 3);
      __builtin_prefetch(p + i + ahead_elems + 8, 0, 3);
    }
    add16(p + i, s0, s1, s2, s3);
  }
  const v4i64 t = s0 + s1 + s2 + s3;
  int64_t s = t[0] + t[1] + t[2] + t[3];
  for (; i < hi; ++i) s += p[i];
  return s;
}

#if defined(__x86_64__)
// 256-bit loads where the CPU has them: the SSE2 build of the same loop (two 16-byte loads per
// vector) reads ~25 % slower from memory on one Zen 3 core (7.9 vs 10.6 GB/s).
__attribute__((target("avx2"))) inline int64_t tuned_sum_avx2(const int64_t* p, size_t lo,
                                                              size_t hi, size_t ahead) {
  return tuned_sum_body(p, lo, hi, ahead);
}
#endif

inline int64_t tuned_sum(const int64_t* p, size_t lo, size_t hi, size_t ahead) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return tuned_sum_avx2(p, lo, hi, ahead);
#endif
  return tuned_sum_body(p, lo, hi, ahead);
}

// Sum of p[lo, hi) read as kStreams parts in lockstep, kTurn int64 (256 bytes) of each in turn,
// with tuned_sum's 4 vector accumulators; the remainder after whole turns is summed linearly.
inline constexpr size_t kStreams = 4;
inline constexpr size_t kTurn = 32;
__attribute__((always_inline)) inline int64_t streams_sum_body(const int64_t* p, size_t lo,
                                                               size_t hi) {
  const size_t part = (hi - lo) / kStreams / kTurn * kTurn;
  v4i64 s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
  for (size_t off = 0; off < part; off += kTurn) {
    for (size_t k = 0; k < kStreams; ++k) {
      const int64_t* q = p + lo + k * part + off;
      for (size_t i = 0; i < kTurn; i += 16) add16(q + i, s0, s1, s2, s3);
    }
  }
  const v4i64 t = s0 + s1 + s2 + s3;
  int64_t s = t[0] + t[1] + t[2] + t[3];
  for (size_t i = lo + kStreams * part; i < hi; ++i) s += p[i];
  return s;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) inline int64_t streams_sum_avx2(const int64_t* p, size_t lo,
                                                                size_t hi) {
  return streams_sum_body(p, lo, hi);
}
#endif

inline int64_t streams_sum(const int64_t* p, size_t lo, size_t hi) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return streams_sum_avx2(p, lo, hi);
#endif
  return streams_sum_body(p, lo, hi);
}

}  // namespace geniex::bench
