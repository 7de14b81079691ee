// Weight repacking (portable byte shuffles), activation preparation, the scalar packed kernels
// and packed_kernels() dispatch.
#include "backends/cpu/kernels/repack.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/repack_internal.h"
#include "core/fp16.h"
#include "quant/quant_types.h"

namespace geniex::cpu {
namespace {

using detail::kQ4_0x8Block;
using detail::kQ4_Kx8Block;
using detail::kQ4_Kx8Mins;
using detail::kQ4_Kx8Qs;
using detail::kQ4_Kx8Scales;
using detail::kQ6_Kx8Block;
using detail::kQ6_Kx8Scales;
using detail::kQ8K6Ds;
using detail::kQ8KxDs;
using detail::kQ8KxQs;
using detail::kQ8x4Ds;
using detail::kQ8x4Qs;
using detail::load_i32;
using detail::q6_kx8_chunk;

constexpr size_t kQ4_0Bytes = 18, kQ8_0Bytes = 34, kQ4_KBytes = 144, kQ6_KBytes = 210,
                 kQ8_KBytes = 292;

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

void repack_q4_0(int64_t k, const uint8_t* src, size_t src_stride, int64_t n, int64_t g0,
                 int64_t g1, uint8_t* dst) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * kQ4_0x8Block;
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* out = dst + static_cast<size_t>(g) * gb;
    std::memset(out, 0, gb);
    for (int64_t r = 0; r < kPackRows; ++r) {
      const int64_t row = g * kPackRows + r;
      if (row >= n) break;
      const uint8_t* s = src + static_cast<size_t>(row) * src_stride;
      for (size_t ib = 0; ib < nb; ++ib, s += kQ4_0Bytes) {
        uint8_t* b = out + ib * kQ4_0x8Block;
        std::memcpy(b + 2 * r, s, 2);
        for (int m = 0; m < 4; ++m) std::memcpy(b + 16 + 32 * m + 4 * r, s + 2 + 4 * m, 4);
      }
    }
  }
}

// Q8_0 row -> [qs of every block][float d, int32 -8 * Σ q per block].
void prepare_q8_0_for_q4_0x8(const uint8_t* q, int64_t k, uint8_t* dst) {
  const size_t nb = static_cast<size_t>(k / 32);
  uint8_t* ds = dst + nb * kQ8x4Qs;
  for (size_t ib = 0; ib < nb; ++ib, q += kQ8_0Bytes) {
    uint16_t h;
    std::memcpy(&h, q, 2);
    const float d = fp16_to_fp32(h);
    int32_t sum = 0;
    for (int e = 0; e < 32; ++e) sum += static_cast<int8_t>(q[2 + e]);
    const int32_t corr = -8 * sum;
    std::memcpy(dst + ib * kQ8x4Qs, q + 2, 32);
    std::memcpy(ds + ib * kQ8x4Ds, &d, 4);
    std::memcpy(ds + ib * kQ8x4Ds + 4, &corr, 4);
  }
}

void q4_0x8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                        int64_t nc, float* out, size_t out_stride) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * kQ4_0x8Block;
  for (int64_t g = 0; g * kPackRows < nr; ++g) {
    const int rows = static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows));
    const uint8_t* wg = w + static_cast<size_t>(g) * gb;
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* y = a + static_cast<size_t>(c) * a_stride;
      const uint8_t* ds = y + nb * kQ8x4Qs;
      float acc[kPackRows] = {};
      for (size_t ib = 0; ib < nb; ++ib) {
        const uint8_t* x = wg + ib * kQ4_0x8Block;
        const auto* qs = reinterpret_cast<const int8_t*>(y + ib * kQ8x4Qs);
        float da;
        std::memcpy(&da, ds + ib * kQ8x4Ds, 4);
        const int32_t corr = load_i32(ds + ib * kQ8x4Ds + 4);
        for (int r = 0; r < rows; ++r) {
          int32_t s = corr;
          for (int m = 0; m < 4; ++m) {
            for (int e = 0; e < 4; ++e) {
              const uint8_t b = x[16 + 32 * m + 4 * r + e];
              s += (b & 0x0F) * qs[4 * m + e] + (b >> 4) * qs[16 + 4 * m + e];
            }
          }
          uint16_t h;
          std::memcpy(&h, x + 2 * r, 2);
          acc[r] += fp16_to_fp32(h) * da * static_cast<float>(s);
        }
      }
      float* o = out + static_cast<size_t>(c) * out_stride + static_cast<size_t>(g) * kPackRows;
      std::copy_n(acc, rows, o);
    }
  }
}

void repack_q4_k(int64_t k, const uint8_t* src, size_t src_stride, int64_t n, int64_t g0,
                 int64_t g1, uint8_t* dst) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * kQ4_Kx8Block;
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* out = dst + static_cast<size_t>(g) * gb;
    std::memset(out, 0, gb);
    for (int64_t r = 0; r < kPackRows; ++r) {
      const int64_t row = g * kPackRows + r;
      if (row >= n) break;
      const uint8_t* s = src + static_cast<size_t>(row) * src_stride;
      for (size_t sb = 0; sb < nsb; ++sb, s += kQ4_KBytes) {
        uint8_t* b = out + sb * kQ4_Kx8Block;
        std::memcpy(b + 2 * r, s, 2);           // d
        std::memcpy(b + 16 + 2 * r, s + 2, 2);  // dmin
        for (int sub = 0; sub < 8; ++sub) {
          uint8_t sc, mn;
          quant::get_scale_min_k4(sub, s + 4, &sc, &mn);
          b[kQ4_Kx8Scales + 8 * sub + r] = sc;
          b[kQ4_Kx8Mins + 16 * (sub / 2) + 2 * r + sub % 2] = mn;
        }
        for (int c = 0; c < 32; ++c) std::memcpy(b + kQ4_Kx8Qs + 32 * c + 4 * r, s + 16 + 4 * c, 4);
      }
    }
  }
}

// Q8_K row -> [qs of every super-block][float d, int16 sums of the 8 sub-blocks].
void prepare_q8_k_for_q4_kx8(const uint8_t* q, int64_t k, uint8_t* dst) {
  const size_t nsb = static_cast<size_t>(k / 256);
  uint8_t* ds = dst + nsb * kQ8KxQs;
  for (size_t sb = 0; sb < nsb; ++sb, q += kQ8_KBytes) {
    std::memcpy(dst + sb * kQ8KxQs, q + 4, 256);
    std::memcpy(ds + sb * kQ8KxDs, q, 4);
    for (int sub = 0; sub < 8; ++sub) {
      int16_t b[2];
      std::memcpy(b, q + 260 + 4 * sub, 4);
      const auto sum = static_cast<int16_t>(b[0] + b[1]);
      std::memcpy(ds + sb * kQ8KxDs + 4 + 2 * sub, &sum, 2);
    }
  }
}

void q4_kx8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                        int64_t nc, float* out, size_t out_stride) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * kQ4_Kx8Block;
  for (int64_t g = 0; g * kPackRows < nr; ++g) {
    const int rows = static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows));
    const uint8_t* wg = w + static_cast<size_t>(g) * gb;
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* y = a + static_cast<size_t>(c) * a_stride;
      const uint8_t* ds = y + nsb * kQ8KxQs;
      float acc[kPackRows] = {};
      for (size_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* x = wg + sb * kQ4_Kx8Block;
        const auto* qs = reinterpret_cast<const int8_t*>(y + sb * kQ8KxQs);
        float da;
        std::memcpy(&da, ds + sb * kQ8KxDs, 4);
        int16_t ssum[8];
        std::memcpy(ssum, ds + sb * kQ8KxDs + 4, 16);
        for (int r = 0; r < rows; ++r) {
          int32_t isum = 0, msum = 0;
          for (int j = 0; j < 4; ++j) {
            int32_t lo = 0, hi = 0;
            for (int t = 0; t < 8; ++t) {
              for (int e = 0; e < 4; ++e) {
                const uint8_t b = x[kQ4_Kx8Qs + 32 * (8 * j + t) + 4 * r + e];
                lo += (b & 0x0F) * qs[64 * j + 4 * t + e];
                hi += (b >> 4) * qs[64 * j + 32 + 4 * t + e];
              }
            }
            isum += lo * x[kQ4_Kx8Scales + 8 * (2 * j) + r] +
                    hi * x[kQ4_Kx8Scales + 8 * (2 * j + 1) + r];
          }
          for (int sub = 0; sub < 8; ++sub) {
            msum += x[kQ4_Kx8Mins + 16 * (sub / 2) + 2 * r + sub % 2] * ssum[sub];
          }
          acc[r] += f16_at(x + 2 * r) * da * static_cast<float>(isum) -
                    f16_at(x + 16 + 2 * r) * da * static_cast<float>(msum);
        }
      }
      float* o = out + static_cast<size_t>(c) * out_stride + static_cast<size_t>(g) * kPackRows;
      std::copy_n(acc, rows, o);
    }
  }
}

void repack_q6_k(int64_t k, const uint8_t* src, size_t src_stride, int64_t n, int64_t g0,
                 int64_t g1, uint8_t* dst) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * kQ6_Kx8Block;
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* out = dst + static_cast<size_t>(g) * gb;
    std::memset(out, 0, gb);
    for (int64_t r = 0; r < kPackRows; ++r) {
      const int64_t row = g * kPackRows + r;
      if (row >= n) break;
      const uint8_t* s = src + static_cast<size_t>(row) * src_stride;
      for (size_t sb = 0; sb < nsb; ++sb, s += kQ6_KBytes) {
        uint8_t* b = out + sb * kQ6_Kx8Block;
        std::memcpy(b + 2 * r, s + 208, 2);
        for (int sub = 0; sub < 16; ++sub) b[kQ6_Kx8Scales + 8 * sub + r] = s[192 + sub];
        for (int nh = 0; nh < 2; ++nh) {
          for (int v = 0; v < 8; ++v) {
            std::memcpy(b + q6_kx8_chunk(nh, v, 0) + 4 * r, s + 128 + 32 * nh + 4 * v, 4);
            std::memcpy(b + q6_kx8_chunk(nh, v, 1) + 4 * r, s + 64 * nh + 4 * v, 4);
            std::memcpy(b + q6_kx8_chunk(nh, v, 2) + 4 * r, s + 64 * nh + 32 + 4 * v, 4);
          }
        }
      }
    }
  }
}

// Q8_K row -> [qs of every super-block][float d, int32 -32 * bsum of each sub-block of 16].
void prepare_q8_k_for_q6_kx8(const uint8_t* q, int64_t k, uint8_t* dst) {
  const size_t nsb = static_cast<size_t>(k / 256);
  uint8_t* ds = dst + nsb * kQ8KxQs;
  for (size_t sb = 0; sb < nsb; ++sb, q += kQ8_KBytes) {
    std::memcpy(dst + sb * kQ8KxQs, q + 4, 256);
    std::memcpy(ds + sb * kQ8K6Ds, q, 4);
    for (int sub = 0; sub < 16; ++sub) {
      int16_t b;
      std::memcpy(&b, q + 260 + 2 * sub, 2);
      const int32_t corr = -32 * b;
      std::memcpy(ds + sb * kQ8K6Ds + 4 + 4 * sub, &corr, 4);
    }
  }
}

// The unsigned 6-bit quant (q + 32) of element 128n + 32i + 4v + e of row r.
inline int q6_kx8_value(const uint8_t* x, int r, int nh, int i, int v, int e) {
  const uint8_t ql = x[q6_kx8_chunk(nh, v, 1 + (i & 1)) + 4 * r + e];
  const uint8_t qh = x[q6_kx8_chunk(nh, v, 0) + 4 * r + e];
  const int lo = i < 2 ? (ql & 0x0F) : (ql >> 4);
  return lo | (((qh >> (2 * i)) & 3) << 4);
}

void q6_kx8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                        int64_t nc, float* out, size_t out_stride) {
  const size_t nsb = static_cast<size_t>(k / 256);
  const size_t gb = nsb * kQ6_Kx8Block;
  for (int64_t g = 0; g * kPackRows < nr; ++g) {
    const int rows = static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows));
    const uint8_t* wg = w + static_cast<size_t>(g) * gb;
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* y = a + static_cast<size_t>(c) * a_stride;
      const uint8_t* ds = y + nsb * kQ8KxQs;
      float acc[kPackRows] = {};
      for (size_t sb = 0; sb < nsb; ++sb) {
        const uint8_t* x = wg + sb * kQ6_Kx8Block;
        const auto* qs = reinterpret_cast<const int8_t*>(y + sb * kQ8KxQs);
        const uint8_t* d = ds + sb * kQ8K6Ds;
        float da;
        std::memcpy(&da, d, 4);
        for (int r = 0; r < rows; ++r) {
          int32_t isum = 0;
          for (int nh = 0; nh < 2; ++nh) {
            for (int i = 0; i < 4; ++i) {
              for (int h = 0; h < 2; ++h) {
                const int sub = 8 * nh + 2 * i + h;
                int32_t s = load_i32(d + 4 + 4 * sub);
                for (int v = 4 * h; v < 4 * h + 4; ++v) {
                  for (int e = 0; e < 4; ++e) {
                    s += q6_kx8_value(x, r, nh, i, v, e) * qs[128 * nh + 32 * i + 4 * v + e];
                  }
                }
                isum += s * static_cast<int8_t>(x[kQ6_Kx8Scales + 8 * sub + r]);
              }
            }
          }
          acc[r] += f16_at(x + 2 * r) * da * static_cast<float>(isum);
        }
      }
      float* o = out + static_cast<size_t>(c) * out_stride + static_cast<size_t>(g) * kPackRows;
      std::copy_n(acc, rows, o);
    }
  }
}

PackedGemmFn packed_gemm_for(Isa isa, GgmlType t) {
  switch (isa) {
    case Isa::kScalar: return detail::scalar_packed_gemm(t);
#if defined(GENIEX_CPU_X86)
    case Isa::kSse4: return detail::sse4_packed_gemm(t);
    case Isa::kAvx2: return detail::avx2_packed_gemm(t);
    case Isa::kAvx512Vnni: return detail::avx512vnni_packed_gemm(t);
#endif
#if defined(GENIEX_CPU_ARM64)
    case Isa::kNeon: return detail::neon_packed_gemm(t);
    case Isa::kNeonDotprod: return detail::neon_dotprod_packed_gemm(t);
    case Isa::kNeonI8mm: return detail::neon_i8mm_packed_gemm(t);
#endif
    default: return nullptr;
  }
}

}  // namespace

namespace detail {
PackedGemmFn scalar_packed_gemm(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0: return q4_0x8_gemm_scalar;
    case GgmlType::kQ4_K: return q4_kx8_gemm_scalar;
    case GgmlType::kQ6_K: return q6_kx8_gemm_scalar;
    case GgmlType::kQ8_0: return q8_0x8_gemm_scalar;
    case GgmlType::kQ5_0: return q5_0x8_gemm_scalar;
    default: return nullptr;
  }
}
}  // namespace detail

bool can_repack(GgmlType t) {
  return t == GgmlType::kQ4_0 || t == GgmlType::kQ4_K || t == GgmlType::kQ6_K ||
         t == GgmlType::kQ8_0 || t == GgmlType::kQ5_0;
}

size_t packed_group_bytes(GgmlType t, int64_t k) {
  if (k <= 0) return 0;
  if (t == GgmlType::kQ4_0 && k % 32 == 0) return static_cast<size_t>(k / 32) * kQ4_0x8Block;
  if (t == GgmlType::kQ8_0 && k % 32 == 0)
    return static_cast<size_t>(k / 32) * detail::kQ8_0x8Block;
  if (t == GgmlType::kQ5_0 && k % 32 == 0)
    return static_cast<size_t>(k / 32) * detail::kQ5_0x8Block;
  if (t == GgmlType::kQ4_K && k % 256 == 0) return static_cast<size_t>(k / 256) * kQ4_Kx8Block;
  if (t == GgmlType::kQ6_K && k % 256 == 0) return static_cast<size_t>(k / 256) * kQ6_Kx8Block;
  return 0;
}

size_t packed_bytes(GgmlType t, int64_t k, int64_t n) {
  return packed_group_bytes(t, k) * static_cast<size_t>((n + kPackRows - 1) / kPackRows);
}

void repack_groups(GgmlType t, int64_t k, const uint8_t* src, size_t src_stride, int64_t n,
                   int64_t g0, int64_t g1, uint8_t* dst) {
  if (t == GgmlType::kQ4_0) repack_q4_0(k, src, src_stride, n, g0, g1, dst);
  if (t == GgmlType::kQ4_K) repack_q4_k(k, src, src_stride, n, g0, g1, dst);
  if (t == GgmlType::kQ6_K) repack_q6_k(k, src, src_stride, n, g0, g1, dst);
  if (t == GgmlType::kQ8_0) detail::repack_q8_0(k, src, src_stride, n, g0, g1, dst);
  if (t == GgmlType::kQ5_0) detail::repack_q5_0(k, src, src_stride, n, g0, g1, dst);
}

bool unpack_row(GgmlType t, int64_t k, const uint8_t* packed, int64_t row, uint8_t* dst) {
  // Q4_0x8 and Q8_0x8 share the scheme: per block 8 f16 scales (row r's at 2r), then chunks of
  // 32 bytes holding row r's 4 bytes at 4r (Q4_0: 4 chunks of qs, Q8_0: 8).
  size_t block = 0, src_block = 0, chunks = 0;
  if (t == GgmlType::kQ4_0) {
    block = kQ4_0x8Block, src_block = kQ4_0Bytes, chunks = 4;
  } else if (t == GgmlType::kQ8_0) {
    block = detail::kQ8_0x8Block, src_block = kQ8_0Bytes, chunks = 8;
  } else {
    return false;
  }
  if (k <= 0 || k % 32 != 0 || row < 0) return false;
  const size_t nb = static_cast<size_t>(k / 32);
  const auto r = static_cast<size_t>(row % kPackRows);
  const uint8_t* g = packed + static_cast<size_t>(row / kPackRows) * nb * block;
  for (size_t ib = 0; ib < nb; ++ib, dst += src_block) {
    const uint8_t* b = g + ib * block;
    std::memcpy(dst, b + 2 * r, 2);
    for (size_t m = 0; m < chunks; ++m) std::memcpy(dst + 2 + 4 * m, b + 16 + 32 * m + 4 * r, 4);
  }
  return true;
}

std::optional<PackedKernels> packed_kernels(GgmlType t, Isa isa) {
  if (!can_repack(t)) return std::nullopt;
  const auto dot = dot_kernels(t, isa);
  if (!dot) return std::nullopt;
  for (Isa i = isa;; i = lower_isa(i)) {
    if (isa_available(i)) {
      if (PackedGemmFn g = packed_gemm_for(i, t)) {
        if (t == GgmlType::kQ6_K) {
          return PackedKernels{dot->act_type,
                               dot->quantize_act,
                               prepare_q8_k_for_q6_kx8,
                               detail::q8k_for_q6_kx8_bytes,
                               g,
                               i};
        }
        if (t == GgmlType::kQ8_0 || t == GgmlType::kQ5_0) {
          return PackedKernels{dot->act_type,
                               dot->quantize_act,
                               t == GgmlType::kQ8_0 ? detail::prepare_q8_0_for_q8_0x8
                                                    : detail::prepare_q8_0_for_q5_0x8,
                               detail::q8_for_x8_bytes,
                               g,
                               i,
                               true};
        }
        if (t == GgmlType::kQ4_K) {
          // NEON keeps the row kernel's float order; x86 sums each sub-block in int16 first and
          // scales once per super-block.
          return PackedKernels{dot->act_type,
                               dot->quantize_act,
                               prepare_q8_k_for_q4_kx8,
                               detail::q8k_for_q4_kx8_bytes,
                               g,
                               i,
                               is_neon(i)};
        }
        return PackedKernels{dot->act_type,
                             dot->quantize_act,
                             prepare_q8_0_for_q4_0x8,
                             detail::q8_for_q4_0x8_bytes,
                             g,
                             i};
      }
    }
    if (i == Isa::kScalar) break;
  }
  return std::nullopt;
}

}  // namespace geniex::cpu
