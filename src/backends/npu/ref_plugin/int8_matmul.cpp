// The reference NPU's matmul numerics: int8 weights per output channel, int8 activations per
// token (dynamic scale), int32 accumulation, one f32 rescale per output.
#include <algorithm>
#include <cmath>

#include "backends/npu/ref_plugin/ref_device.h"
#include "quant/quant.h"

namespace geniex::npu_ref {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

// Symmetric int8 of one row: scale = max|x| / 127, q = round-half-away(x / scale) in [-127, 127].
float quantize_row_int8(const float* x, int64_t k, int8_t* q) {
  float amax = 0.0f;
  for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(x[i]));
  if (!(amax > 0.0f) || !std::isfinite(amax)) {
    std::fill_n(q, k, int8_t{0});
    return 0.0f;
  }
  const float scale = amax / 127.0f;
  const float inv = 127.0f / amax;
  for (int64_t i = 0; i < k; ++i) {
    const float r = std::round(x[i] * inv);
    q[i] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
  }
  return scale;
}

}  // namespace

Status quantize_weight(GgmlType type, const uint8_t* data, int64_t k, int64_t n, Int8Matrix& out) {
  const auto row = ggml_row_bytes(type, static_cast<uint64_t>(k));
  if (!row) return invalid_argument("matmul weight rows are not whole blocks");
  out.k = k;
  out.n = n;
  out.q.assign(sz(k * n), 0);
  out.scale.assign(sz(n), 0.0f);
  std::vector<float> w(sz(k));
  for (int64_t r = 0; r < n; ++r) {
    GENIEX_TRY(quant::dequantize_row(type, std::span<const uint8_t>(data + sz(r) * *row, *row), w));
    out.scale[sz(r)] = quantize_row_int8(w.data(), k, out.q.data() + sz(r * k));
  }
  return {};
}

void int8_matmul(const Int8Matrix& w, const float* x, int64_t m, std::vector<int8_t>& act_q,
                 std::vector<float>& act_scale, float* y) {
  const int64_t k = w.k;
  for (int64_t t = 0; t < m; ++t) {
    act_scale[sz(t)] = quantize_row_int8(x + sz(t * k), k, act_q.data() + sz(t * k));
  }
  for (int64_t t = 0; t < m; ++t) {
    const int8_t* xq = act_q.data() + sz(t * k);
    for (int64_t r = 0; r < w.n; ++r) {
      const int8_t* wq = w.q.data() + sz(r * k);
      int32_t acc = 0;  // |acc| <= 127 * 127 * k < 2^31: compile caps k (kMaxK)
      for (int64_t i = 0; i < k; ++i) acc += int32_t{wq[i]} * int32_t{xq[i]};
      y[sz(t * w.n + r)] = static_cast<float>(acc) * (act_scale[sz(t)] * w.scale[sz(r)]);
    }
  }
}

}  // namespace geniex::npu_ref
