// The instruction ceiling of the batched Q8_0 tile (issue 7: the LM head of an 8-stream decode
// step). Synthetic and L1-resident: 20 blocks of an 8-row weight group (the Q8_0x8 layout: chunk
// j of half h holds 4 elements of each of the 8 rows) against 8 activation rows, so no memory
// traffic is timed, only the arithmetic the x86 tile does per block and activation row:
//
//   avx2_sign      what the AVX2 kernel does: maddubs needs one unsigned operand, so |q| times
//                  the activation carrying q's sign (vpsignb, vpmaddubsw, vpmaddwd per 32 MACs)
//   avx2_nosign    the same without vpsignb: not a correct dot, an upper bound on any AVX2
//                  int8 scheme that still widens through vpmaddubsw + vpmaddwd
//   vnni           vpdpbusd (q + 128, one instruction per 32 MACs, the -128 * Σa correction per
//                  half), where the CPU has AVX512-VNNI + VL; "n/a" elsewhere
//
//   int8_dot_ceiling [--reps 7] [--iters 200000]
//
// GMAC/s per core, median of --reps. The sign and VNNI variants are checked against a scalar
// dot of the same data (exit 1 if they differ). x86 only; elsewhere it says so and exits 0.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

namespace {

constexpr int kRows = 8;     // activation rows
constexpr int kBlocks = 20;  // K = 640, Gemma 3 270M's hidden size
alignas(64) int8_t g_w[kBlocks * 256];
alignas(64) int8_t g_a[kRows][kBlocks * 32];
float g_dw[kBlocks][8], g_da[kRows][kBlocks];
int32_t g_asum[kRows][kBlocks][2];  // Σ a of each half (the VNNI correction)

int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Element e (0..31) of weight row r in block b: chunk (e / 16 * 4 + e % 16 / 4), row r, byte e % 4.
int8_t weight(int b, int r, int e) {
  return g_w[b * 256 + 32 * (e / 16 * 4 + e % 16 / 4) + 4 * r + e % 4];
}

enum class Kind { kSign, kNoSign, kVnni };

template <Kind K>
__attribute__((target("avx2,fma"))) inline __m256i dot4(__m256i q, __m256i aq, __m256i y) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (K == Kind::kSign) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aq, _mm256_sign_epi8(y, q)), ones);
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aq, y), ones);
  }
}

// out[c * 8 + r] = Σ_b dw[b][r] * da[c][b] * dot(weight row r, activation row c) of block b.
template <Kind K>
__attribute__((target("avx2,fma"), noinline)) void tile_avx2(float* out) {
  __m256 acc[kRows][2];
  for (int c = 0; c < kRows; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  for (int b = 0; b < kBlocks; ++b) {
    const int8_t* x = g_w + b * 256;
    const __m256 dw = _mm256_loadu_ps(g_dw[b]);
    for (int h = 0; h < 2; ++h) {
      __m256i q[4], aq[4];
      for (int j = 0; j < 4; ++j) {
        q[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * (4 * h + j)));
        aq[j] = _mm256_sign_epi8(q[j], q[j]);
      }
#pragma GCC unroll 8
      for (int c = 0; c < kRows; ++c) {
        const int8_t* y = g_a[c] + 32 * b + 16 * h;
        const __m256i t = _mm256_add_epi32(
            _mm256_add_epi32(dot4<K>(q[0], aq[0], _mm256_set1_epi32(load_i32(y))),
                             dot4<K>(q[1], aq[1], _mm256_set1_epi32(load_i32(y + 4)))),
            _mm256_add_epi32(dot4<K>(q[2], aq[2], _mm256_set1_epi32(load_i32(y + 8))),
                             dot4<K>(q[3], aq[3], _mm256_set1_epi32(load_i32(y + 12)))));
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(g_da[c][b]));
        acc[c][h] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[c][h]);
      }
    }
  }
  for (int c = 0; c < kRows; ++c)
    _mm256_storeu_ps(out + 8 * c, _mm256_add_ps(acc[c][0], acc[c][1]));
}

__attribute__((target("avx2,fma,avx512f,avx512vl,avx512vnni"), noinline)) void tile_vnni(
    float* out) {
  __m256 acc[kRows][2];
  for (int c = 0; c < kRows; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int b = 0; b < kBlocks; ++b) {
    const int8_t* x = g_w + b * 256;
    const __m256 dw = _mm256_loadu_ps(g_dw[b]);
    for (int h = 0; h < 2; ++h) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) {
        q[j] = _mm256_xor_si256(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * (4 * h + j))), bias);
      }
#pragma GCC unroll 8
      for (int c = 0; c < kRows; ++c) {
        const int8_t* y = g_a[c] + 32 * b + 16 * h;
        __m256i t = _mm256_set1_epi32(-128 * g_asum[c][b][h]);
        for (int j = 0; j < 4; ++j) {
          t = _mm256_dpbusd_epi32(t, q[j], _mm256_set1_epi32(load_i32(y + 4 * j)));
        }
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(g_da[c][b]));
        acc[c][h] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(t), acc[c][h]);
      }
    }
  }
  for (int c = 0; c < kRows; ++c)
    _mm256_storeu_ps(out + 8 * c, _mm256_add_ps(acc[c][0], acc[c][1]));
}

void reference(float* out) {
  for (int c = 0; c < kRows; ++c) {
    for (int r = 0; r < 8; ++r) {
      double s = 0;
      for (int b = 0; b < kBlocks; ++b) {
        int32_t d = 0;
        for (int e = 0; e < 32; ++e) d += weight(b, r, e) * g_a[c][32 * b + e];
        s += static_cast<double>(g_dw[b][r]) * g_da[c][b] * d;
      }
      out[8 * c + r] = static_cast<float>(s);
    }
  }
}

bool close(const float* x, const float* ref) {
  for (int i = 0; i < kRows * 8; ++i) {
    if (std::fabs(x[i] - ref[i]) > 1e-4f * (1.0f + std::fabs(ref[i]))) return false;
  }
  return true;
}

double gmacs(void (*f)(float*), int reps, long iters) {
  std::vector<double> v;
  float out[kRows * 8];
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i) {
      f(out);
      __asm__ volatile("" : : "r"(out) : "memory");
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    v.push_back(static_cast<double>(kRows) * 8 * 32 * kBlocks * static_cast<double>(iters) / ns);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

static int run(int reps, long iters) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("int8_dot_ceiling: this CPU has no AVX2/FMA; nothing to measure\n");
    return 0;
  }
  // Q8_0-like data: weights and activations in [-127, 127], positive scales.
  uint32_t s = 12345;
  auto next = [&] { return s = s * 1664525u + 1013904223u; };
  for (auto& w : g_w) w = static_cast<int8_t>(static_cast<int>(next() >> 24) % 255 - 127);
  for (int c = 0; c < kRows; ++c) {
    for (int b = 0; b < kBlocks; ++b) {
      g_da[c][b] = 0.001f + static_cast<float>(next() >> 16) * 1e-8f;
      for (int h = 0; h < 2; ++h) {
        int32_t sum = 0;
        for (int e = 0; e < 16; ++e) {
          const auto v = static_cast<int8_t>(static_cast<int>(next() >> 24) % 255 - 127);
          g_a[c][32 * b + 16 * h + e] = v;
          sum += v;
        }
        g_asum[c][b][h] = sum;
      }
    }
  }
  for (auto& row : g_dw) {
    for (float& d : row) d = 0.002f + static_cast<float>(next() >> 16) * 1e-8f;
  }
  float ref[kRows * 8], out[kRows * 8];
  reference(ref);
  tile_avx2<Kind::kSign>(out);
  if (!close(out, ref)) {
    std::fprintf(stderr, "int8_dot_ceiling: avx2_sign differs from the scalar dot\n");
    return 1;
  }
  const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
  if (vnni) {
    tile_vnni(out);
    if (!close(out, ref)) {
      std::fprintf(stderr, "int8_dot_ceiling: vnni differs from the scalar dot\n");
      return 1;
    }
  }
  std::printf(
      "8 activation rows x one 8-row Q8_0 group, K = %d, in L1; GMAC/s per core, median of %d\n",
      32 * kBlocks, reps);
  std::printf("| variant | GMAC/s |\n|---|--:|\n");
  std::printf("| avx2_sign (the kernel's op mix) | %.1f |\n",
              gmacs(tile_avx2<Kind::kSign>, reps, iters));
  std::printf("| avx2_nosign (upper bound, not a dot) | %.1f |\n",
              gmacs(tile_avx2<Kind::kNoSign>, reps, iters));
  if (vnni) {
    std::printf("| vnni | %.1f |\n", gmacs(tile_vnni, reps, iters));
  } else {
    std::printf("| vnni | n/a (no AVX512-VNNI here) |\n");
  }
  return 0;
}

#else

static int run(int, long) {
  std::printf("int8_dot_ceiling: x86 only (the AVX2 / VNNI op mixes)\n");
  return 0;
}

#endif

int main(int argc, char** argv) {
  int reps = 7;
  long iters = 200000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--iters" && i + 1 < argc) {
      iters = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: int8_dot_ceiling [--reps 7] [--iters 200000]\n");
      return 2;
    }
  }
  if (reps < 1 || iters < 1) {
    std::fprintf(stderr, "int8_dot_ceiling: bad arguments\n");
    return 2;
  }
  return run(reps, iters);
}
