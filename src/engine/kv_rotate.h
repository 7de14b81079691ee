// RoPE re-rotation of cached K rows for a context shift: a key cached at position p moves to
// p + delta by a rotation of delta (RoPE angles are linear in the position). Rows of any KV type
// (dequantized, rotated, quantized again — the same rounding a fresh write gets). A quantized
// cache's Walsh-Hadamard rotation (models::KvRotation) is undone around the RoPE step.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace geniex::engine {

/// Rotates `n_rows` K rows of layer `il` (type `type`, head_dim_k * n_head_kv elements each)
/// in place by `delta` positions.
Status rotate_k_rows(const models::ModelConfig& config, const models::ModelWeights& weights,
                     GgmlType type, uint32_t il, uint8_t* rows, int64_t n_rows, int32_t delta);

}  // namespace geniex::engine
