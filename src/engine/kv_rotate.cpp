#include "engine/kv_rotate.h"

#include <span>
#include <vector>

#include "graph/ref_ops.h"
#include "models/forward_graph.h"
#include "quant/quant.h"

namespace geniex::engine {

Status rotate_k_rows(const models::ModelConfig& config, const models::ModelWeights& weights,
                     GgmlType type, uint32_t il, uint8_t* rows, int64_t n_rows, int32_t delta) {
  const int64_t d = config.head_dim_k;
  const int64_t n_head = config.n_head_kv_at(il);
  const int64_t row = d * n_head;
  const auto row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(row));
  if (!row_bytes) return invalid_argument("rotate_k_rows: a K row is not whole blocks");
  const auto rb = static_cast<size_t>(*row_bytes);
  std::vector<float> x(static_cast<size_t>(row * n_rows)), y(x.size());
  for (int64_t r = 0; r < n_rows; ++r) {
    GENIEX_TRY(quant::dequantize_row(
        type, std::span<const uint8_t>(rows + static_cast<size_t>(r) * rb, rb),
        std::span<float>(x.data() + r * row, static_cast<size_t>(row))));
  }
  graph::RopeParams rp;
  rp.mode = config.rope.mode == models::RopeMode::kNeox ? graph::RopeMode::kNeox
                                                        : graph::RopeMode::kNormal;
  rp.n_dims = static_cast<int32_t>(config.rope.n_rot);
  rp.base = config.rope_base_at(il);
  rp.freq_scale = config.rope_freq_scale_at(il);
  std::vector<float> factors;
  if (const auto* rf = weights.layers[il].rope_freqs; rf != nullptr) {
    factors.resize(static_cast<size_t>(rf->ne[0]));
    GENIEX_TRY(quant::dequantize_row(rf->type, rf->data, factors));
  }
  const std::vector<int32_t> pos(static_cast<size_t>(n_rows), delta);
  // A quantized cache holds K rotated by a Walsh-Hadamard block after RoPE (forward_graph.h
  // KvRotation): back to RoPE's basis, shift, rotate again (H is its own inverse).
  const int32_t h = models::kv_rotation(config, type).k;
  if (h != 0) {
    GENIEX_TRY(graph::ref::hadamard(x, h, y));
    x.swap(y);
  }
  GENIEX_TRY(graph::ref::rope(x, d, n_head, n_rows, pos, rp, factors, y));
  if (h != 0) {
    GENIEX_TRY(graph::ref::hadamard(y, h, x));
    x.swap(y);
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    GENIEX_TRY(quant::quantize_row(
        type, std::span<const float>(y.data() + r * row, static_cast<size_t>(row)),
        std::span<uint8_t>(rows + static_cast<size_t>(r) * rb, rb)));
  }
  return {};
}

}  // namespace geniex::engine
