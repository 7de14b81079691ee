// LFM2's short convolution (graph ops kShortConv / kShortConvState) on the CPU, in float with
// ggml_ssm_conv's operation order: per output, sum = 0, then sum += w[j] * h[j] for tap j = 0..L-1
// (tap L-1 meets the current token). Each slot's history is its state columns followed by its
// tokens of the batch, in order; the loops run channel-innermost so the compiler vectorizes.
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"

namespace geniex::backends::cpu {

Status short_conv(const ShortConvArgs& a, float* conv, float* new_state) {
  const int64_t E = a.n_embd, T = a.n_tokens, L = a.n_taps, H = a.n_taps - 1, S = a.n_slots;
  const auto uz = [](int64_t v) { return static_cast<size_t>(v); };
  std::vector<std::vector<int64_t>> tokens(uz(S));
  for (int64_t t = 0; t < T; ++t) {
    const int32_t s = a.seq == nullptr ? 0 : a.seq[t];
    if (s < 0) continue;
    if (s >= S) {
      return out_of_range("slot " + std::to_string(s) + " outside [0, " + std::to_string(S) + ")");
    }
    tokens[uz(s)].push_back(t);
  }
  std::vector<float> zeros;
  if (a.state == nullptr) zeros.assign(uz(E), 0.0f);
  if (conv != nullptr) {
    for (int64_t i = 0; i < E * T; ++i) conv[i] = 0.0f;  // padding tokens stay 0
  }
  for (int64_t s = 0; s < S; ++s) {
    const auto& list = tokens[uz(s)];
    const auto n = static_cast<int64_t>(list.size());
    // Column i of state ++ this slot's tokens.
    auto col = [&](int64_t i) -> const float* {
      if (i < H) return a.state == nullptr ? zeros.data() : a.state + (s * H + i) * E;
      return a.u + list[uz(i - H)] * E;
    };
    if (conv != nullptr) {
      for (int64_t i = 0; i < n; ++i) {
        float* y = conv + list[uz(i)] * E;
        for (int64_t j = 0; j < L; ++j) {
          const float* h = col(i + j);
          const float* w = a.w + j;
          for (int64_t c = 0; c < E; ++c) y[c] += w[c * L] * h[c];
        }
      }
    }
    if (new_state != nullptr) {
      for (int64_t k = 0; k < H; ++k) {
        const float* h = col(n + k);
        float* d = new_state + (s * H + k) * E;
        for (int64_t c = 0; c < E; ++c) d[c] = h[c];
      }
    }
  }
  return {};
}

}  // namespace geniex::backends::cpu
