// Q8_0x8 and Q5_0x8 (repack_internal.h): weight repacking, activation preparation and the scalar
// packed kernels. The scalar kernels combine each block exactly as quant::vec_dot_ref does
// (exact integer block dot, then sum += float(dot) * d_w * d_a), so their results are
// bit-identical to the reference's.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/repack_internal.h"
#include "core/fp16.h"

namespace geniex::cpu::detail {
namespace {

constexpr size_t kQ8_0Bytes = 34, kQ5_0Bytes = 22;

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

// Q8_0 row -> [qs of every block][float d, -off * Σ q[0..15], -off * Σ q[16..31] per block].
void prepare_q8_0_x8(const uint8_t* q, int64_t k, uint8_t* dst, int32_t off) {
  const size_t nb = static_cast<size_t>(k / 32);
  uint8_t* ds = dst + nb * kQ8x4Qs;
  for (size_t ib = 0; ib < nb; ++ib, q += kQ8_0Bytes) {
    const float d = f16_at(q);
    int32_t lo = 0, hi = 0;  // two plain loops: they vectorize
    for (int e = 0; e < 16; ++e) lo += static_cast<int8_t>(q[2 + e]);
    for (int e = 16; e < 32; ++e) hi += static_cast<int8_t>(q[2 + e]);
    const int32_t corr[2] = {-off * lo, -off * hi};
    std::memcpy(dst + ib * kQ8x4Qs, q + 2, 32);
    std::memcpy(ds + ib * kQ8x8Ds, &d, 4);
    std::memcpy(ds + ib * kQ8x8Ds + 4, corr, 8);
  }
}

// The scalar packed kernel: Value(x, r, e) is the weight of element e of row r in block x, as
// fed to the integer dot (Q8_0: signed q; Q5_0: q + 16, corrected by the activation sums).
template <size_t kBlock, bool kCorr, typename Value>
void x8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                    int64_t nc, float* out, size_t out_stride, Value value) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * kBlock;
  for (int64_t g = 0; g * kPackRows < nr; ++g) {
    const int rows = static_cast<int>(std::min<int64_t>(kPackRows, nr - g * kPackRows));
    const uint8_t* wg = w + static_cast<size_t>(g) * gb;
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* y = a + static_cast<size_t>(c) * a_stride;
      const uint8_t* ds = y + nb * kQ8x4Qs;
      float acc[kPackRows] = {};
      for (size_t ib = 0; ib < nb; ++ib) {
        const uint8_t* x = wg + ib * kBlock;
        const auto* qs = reinterpret_cast<const int8_t*>(y + ib * kQ8x4Qs);
        const uint8_t* d = ds + ib * kQ8x8Ds;
        float da;
        std::memcpy(&da, d, 4);
        for (int r = 0; r < rows; ++r) {
          int32_t s = kCorr ? load_i32(d + 4) + load_i32(d + 8) : 0;
          for (int e = 0; e < 32; ++e) s += value(x, r, e) * qs[e];
          acc[r] += static_cast<float>(s) * f16_at(x + 2 * r) * da;
        }
      }
      float* o = out + static_cast<size_t>(c) * out_stride + static_cast<size_t>(g) * kPackRows;
      std::copy_n(acc, rows, o);
    }
  }
}

}  // namespace

void repack_q8_0(int64_t k, const uint8_t* src, size_t src_stride, int64_t n, int64_t g0,
                 int64_t g1, uint8_t* dst) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * kQ8_0x8Block;
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* out = dst + static_cast<size_t>(g) * gb;
    std::memset(out, 0, gb);
    for (int64_t r = 0; r < kPackRows; ++r) {
      const int64_t row = g * kPackRows + r;
      if (row >= n) break;
      const uint8_t* s = src + static_cast<size_t>(row) * src_stride;
      for (size_t ib = 0; ib < nb; ++ib, s += kQ8_0Bytes) {
        uint8_t* b = out + ib * kQ8_0x8Block;
        std::memcpy(b + 2 * r, s, 2);
        for (int m = 0; m < 8; ++m) std::memcpy(b + kQ8_0x8Qs + 32 * m + 4 * r, s + 2 + 4 * m, 4);
      }
    }
  }
}

void repack_q5_0(int64_t k, const uint8_t* src, size_t src_stride, int64_t n, int64_t g0,
                 int64_t g1, uint8_t* dst) {
  const size_t nb = static_cast<size_t>(k / 32);
  const size_t gb = nb * kQ5_0x8Block;
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* out = dst + static_cast<size_t>(g) * gb;
    std::memset(out, 0, gb);
    for (int64_t r = 0; r < kPackRows; ++r) {
      const int64_t row = g * kPackRows + r;
      if (row >= n) break;
      const uint8_t* s = src + static_cast<size_t>(row) * src_stride;
      for (size_t ib = 0; ib < nb; ++ib, s += kQ5_0Bytes) {
        uint8_t* b = out + ib * kQ5_0x8Block;
        std::memcpy(b + 2 * r, s, 2);
        uint32_t qh;
        std::memcpy(&qh, s + 2, 4);
        for (int e = 0; e < 4; ++e) {
          uint8_t v = 0;
          for (int m = 0; m < 4; ++m) {
            v |= static_cast<uint8_t>(((qh >> (4 * m + e)) & 1u) << m);
            v |= static_cast<uint8_t>(((qh >> (16 + 4 * m + e)) & 1u) << (4 + m));
          }
          b[kQ5_0x8Qh + 4 * r + e] = v;
        }
        for (int m = 0; m < 4; ++m) std::memcpy(b + kQ5_0x8Qs + 32 * m + 4 * r, s + 6 + 4 * m, 4);
      }
    }
  }
}

void prepare_q8_0_for_q8_0x8(const uint8_t* q, int64_t k, uint8_t* dst) {
  prepare_q8_0_x8(q, k, dst, 128);
}

void prepare_q8_0_for_q5_0x8(const uint8_t* q, int64_t k, uint8_t* dst) {
  prepare_q8_0_x8(q, k, dst, 16);
}

void q8_0x8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                        int64_t nc, float* out, size_t out_stride) {
  x8_gemm_scalar<kQ8_0x8Block, false>(
      k, w, nr, a, a_stride, nc, out, out_stride, [](const uint8_t* x, int r, int e) {
        return static_cast<int>(static_cast<int8_t>(x[kQ8_0x8Qs + 32 * (e / 4) + 4 * r + e % 4]));
      });
}

void q5_0x8_gemm_scalar(int64_t k, const uint8_t* w, int64_t nr, const uint8_t* a, size_t a_stride,
                        int64_t nc, float* out, size_t out_stride) {
  x8_gemm_scalar<kQ5_0x8Block, true>(
      k, w, nr, a, a_stride, nc, out, out_stride, [](const uint8_t* x, int r, int e) {
        const int m = (e % 16) / 4, j = e % 4, hi = e / 16;
        const uint8_t b = x[kQ5_0x8Qs + 32 * m + 4 * r + j];
        const int nib = hi ? b >> 4 : b & 0x0F;
        const int bit = (x[kQ5_0x8Qh + 4 * r + j] >> (4 * hi + m)) & 1;
        return nib | (bit << 4);
      });
}

}  // namespace geniex::cpu::detail
