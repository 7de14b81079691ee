// Q8_K, the activation format K-quant dot products take (llama.cpp's reference scheme,
// spec §4.12). The K-quant weight quantizers are llama.cpp's own (quantize_ggml_k.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/quant_internal.h"
#include "quant/quant_types.h"

namespace geniex::quant::detail {
namespace {

// Round half to even; saturates far outside the int8 range and maps NaN to 0.
inline int nearest_int(float v) {
  if (!(v == v)) return 0;
  const float c = std::clamp(v, -1048576.0f, 1048576.0f);
  return static_cast<int>(std::nearbyint(c));
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace

void quantize_q8_k(const float* src, uint8_t* dst, size_t nb) {
  for (size_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float a = std::fabs(x[j]);
      if (a > amax) {
        amax = a;
        max = x[j];
      }
    }
    BlockQ8_K b;
    if (amax == 0.0f) {
      std::memset(&b, 0, sizeof(b));
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      b.qs[j] = static_cast<int8_t>(clamp_int(nearest_int(iscale * x[j]), -128, 127));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b.qs[16 * g + j];
      b.bsums[g] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
    store_block(dst, i, b);
  }
}

}  // namespace geniex::quant::detail
