// Dispatch and argument checking for the quant.h API. The per-type kernels live in
// dequant*.cpp, quantize_*.cpp and dot_ref*.cpp and trust the sizes checked here.
#include "quant/quant.h"

#include <limits>
#include <string>
#include <vector>

#include "quant/quant_internal.h"

namespace geniex::quant {
namespace {

using detail::DequantFn;
using detail::DotFn;
using detail::QuantFn;

struct TypeOps {
  GgmlType type;
  DequantFn dequant;
  QuantFn quant;
  DotFn dot;
  GgmlType dot_type;
};

// clang-format off
constexpr TypeOps kOps[] = {
    {GgmlType::kF32,    detail::dequant_f32,    detail::quantize_f32,  detail::dot_f32,    GgmlType::kF32},
    {GgmlType::kF16,    detail::dequant_f16,    detail::quantize_f16,  detail::dot_f16,    GgmlType::kF16},
    {GgmlType::kBF16,   detail::dequant_bf16,   detail::quantize_bf16, detail::dot_bf16,   GgmlType::kBF16},
    {GgmlType::kQ4_0,   detail::dequant_q4_0,   detail::quantize_q4_0, detail::dot_q4_0,   GgmlType::kQ8_0},
    {GgmlType::kQ4_1,   detail::dequant_q4_1,   detail::quantize_q4_1, detail::dot_q4_1,   GgmlType::kQ8_1},
    {GgmlType::kQ5_0,   detail::dequant_q5_0,   detail::quantize_q5_0, detail::dot_q5_0,   GgmlType::kQ8_0},
    {GgmlType::kQ5_1,   detail::dequant_q5_1,   detail::quantize_q5_1, detail::dot_q5_1,   GgmlType::kQ8_1},
    {GgmlType::kQ8_0,   detail::dequant_q8_0,   detail::quantize_q8_0, detail::dot_q8_0,   GgmlType::kQ8_0},
    {GgmlType::kQ8_1,   detail::dequant_q8_1,   detail::quantize_q8_1, nullptr,            GgmlType::kQ8_1},
    {GgmlType::kQ2_K,   detail::dequant_q2_k,   detail::quantize_q2_k, detail::dot_q2_k,   GgmlType::kQ8_K},
    {GgmlType::kQ3_K,   detail::dequant_q3_k,   detail::quantize_q3_k, detail::dot_q3_k,   GgmlType::kQ8_K},
    {GgmlType::kQ4_K,   detail::dequant_q4_k,   detail::quantize_q4_k, detail::dot_q4_k,   GgmlType::kQ8_K},
    {GgmlType::kQ5_K,   detail::dequant_q5_k,   detail::quantize_q5_k, detail::dot_q5_k,   GgmlType::kQ8_K},
    {GgmlType::kQ6_K,   detail::dequant_q6_k,   detail::quantize_q6_k, detail::dot_q6_k,   GgmlType::kQ8_K},
    {GgmlType::kQ8_K,   detail::dequant_q8_k,   detail::quantize_q8_k, nullptr,            GgmlType::kQ8_K},
    {GgmlType::kIQ4_NL, detail::dequant_iq4_nl, detail::quantize_iq4_nl, detail::dot_iq4_nl, GgmlType::kQ8_0},
    {GgmlType::kIQ4_XS, detail::dequant_iq4_xs, detail::quantize_iq4_xs, detail::dot_iq4_xs, GgmlType::kQ8_K},
    {GgmlType::kMXFP4,  detail::dequant_mxfp4,  nullptr,               detail::dot_mxfp4,  GgmlType::kQ8_0},
};
// clang-format on

const TypeOps* find_ops(GgmlType t) {
  for (const auto& op : kOps) {
    if (op.type == t) return &op;
  }
  return nullptr;
}

std::string type_name(GgmlType t) { return std::string(ggml_type_name(t)); }

// Number of blocks in a row of n elements of type t, or an error naming the problem.
Result<size_t> blocks_in(GgmlType t, size_t n, const char* what) {
  const auto& tr = traits(t);
  if (n % tr.block_size != 0) {
    return invalid_argument(std::string(what) + ": " + std::to_string(n) + " elements of " +
                            type_name(t) + " is not a multiple of the block size " +
                            std::to_string(tr.block_size));
  }
  return n / tr.block_size;
}

Status check_bytes(GgmlType t, size_t nb, size_t bytes, const char* what) {
  if (nb > std::numeric_limits<size_t>::max() / traits(t).type_size) {
    return invalid_argument(std::string(what) + ": row of " + std::to_string(nb) + " " +
                            type_name(t) + " blocks is too large");
  }
  const size_t want = nb * traits(t).type_size;
  if (bytes != want) {
    return invalid_argument(std::string(what) + ": " + type_name(t) + " row of " +
                            std::to_string(nb * traits(t).block_size) + " elements needs " +
                            std::to_string(want) + " bytes, got " + std::to_string(bytes));
  }
  return {};
}

}  // namespace

bool can_dequantize(GgmlType t) {
  const auto* op = find_ops(t);
  return op != nullptr && op->dequant != nullptr;
}

bool can_quantize(GgmlType t) {
  const auto* op = find_ops(t);
  return op != nullptr && op->quant != nullptr;
}

bool can_vec_dot(GgmlType t) {
  const auto* op = find_ops(t);
  return op != nullptr && op->dot != nullptr;
}

GgmlType vec_dot_type(GgmlType t) {
  const auto* op = find_ops(t);
  return op != nullptr ? op->dot_type : t;
}

Status dequantize_row(GgmlType t, std::span<const uint8_t> src, std::span<float> dst) {
  const auto* op = find_ops(t);
  if (op == nullptr || op->dequant == nullptr) {
    return unimplemented("dequantize_row: type " + type_name(t) + " is not supported");
  }
  GENIEX_ASSIGN_OR_RETURN(const size_t nb, blocks_in(t, dst.size(), "dequantize_row"));
  GENIEX_TRY(check_bytes(t, nb, src.size(), "dequantize_row"));
  if (nb != 0) op->dequant(src.data(), dst.data(), nb);
  return {};
}

Status quantize_row(GgmlType t, std::span<const float> src, std::span<uint8_t> dst) {
  const auto* op = find_ops(t);
  if (op == nullptr || op->quant == nullptr) {
    return unimplemented("quantize_row: type " + type_name(t) + " is not supported");
  }
  GENIEX_ASSIGN_OR_RETURN(const size_t nb, blocks_in(t, src.size(), "quantize_row"));
  GENIEX_TRY(check_bytes(t, nb, dst.size(), "quantize_row"));
  if (nb != 0) op->quant(src.data(), dst.data(), nb);
  return {};
}

namespace {

detail::WeightedQuantFn weighted_fn(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0: return detail::quantize_q4_0_w;
    case GgmlType::kQ4_1: return detail::quantize_q4_1_w;
    case GgmlType::kQ5_0: return detail::quantize_q5_0_w;
    case GgmlType::kQ5_1: return detail::quantize_q5_1_w;
    case GgmlType::kQ2_K: return detail::quantize_q2_k_w;
    case GgmlType::kQ3_K: return detail::quantize_q3_k_w;
    case GgmlType::kQ4_K: return detail::quantize_q4_k_w;
    case GgmlType::kQ5_K: return detail::quantize_q5_k_w;
    case GgmlType::kQ6_K: return detail::quantize_q6_k_w;
    case GgmlType::kIQ4_NL: return detail::quantize_iq4_nl_w;
    case GgmlType::kIQ4_XS: return detail::quantize_iq4_xs_w;
    default: return nullptr;
  }
}

}  // namespace

bool uses_importance(GgmlType t) { return weighted_fn(t) != nullptr; }

Status quantize_rows(GgmlType t, std::span<const float> src, std::span<uint8_t> dst,
                     size_t n_per_row, std::span<const float> imatrix) {
  const auto* op = find_ops(t);
  if (op == nullptr || op->quant == nullptr) {
    return unimplemented("quantize_rows: type " + type_name(t) + " is not supported");
  }
  if (n_per_row == 0 || src.size() % n_per_row != 0) {
    return invalid_argument("quantize_rows: " + std::to_string(src.size()) +
                            " elements are not whole rows of " + std::to_string(n_per_row));
  }
  GENIEX_ASSIGN_OR_RETURN(const size_t nb_row, blocks_in(t, n_per_row, "quantize_rows"));
  const size_t n_rows = src.size() / n_per_row;
  if (n_rows != 0 && nb_row > std::numeric_limits<size_t>::max() / n_rows) {
    return invalid_argument("quantize_rows: too many blocks");
  }
  GENIEX_TRY(check_bytes(t, nb_row * n_rows, dst.size(), "quantize_rows"));
  const detail::WeightedQuantFn wfn = imatrix.empty() ? nullptr : weighted_fn(t);
  if (wfn == nullptr) {
    if (nb_row * n_rows != 0) op->quant(src.data(), dst.data(), nb_row * n_rows);
    return {};
  }
  if (imatrix.size() != n_per_row) {
    return invalid_argument("quantize_rows: the importance matrix has " +
                            std::to_string(imatrix.size()) + " values for rows of " +
                            std::to_string(n_per_row));
  }
  const size_t row_bytes = nb_row * traits(t).type_size;
  for (size_t r = 0; r < n_rows; ++r) {
    wfn(src.data() + r * n_per_row, dst.data() + r * row_bytes, n_per_row, imatrix.data());
  }
  return {};
}

Result<float> vec_dot_ref(GgmlType weight_type, std::span<const uint8_t> w_row,
                          std::span<const uint8_t> act_row, size_t n) {
  const auto* op = find_ops(weight_type);
  if (op == nullptr || op->dot == nullptr) {
    return unimplemented("vec_dot_ref: weight type " + type_name(weight_type) +
                         " is not supported");
  }
  GENIEX_ASSIGN_OR_RETURN(const size_t nb, blocks_in(weight_type, n, "vec_dot_ref weights"));
  GENIEX_TRY(check_bytes(weight_type, nb, w_row.size(), "vec_dot_ref weights"));
  GENIEX_ASSIGN_OR_RETURN(const size_t nb_a, blocks_in(op->dot_type, n, "vec_dot_ref activations"));
  GENIEX_TRY(check_bytes(op->dot_type, nb_a, act_row.size(), "vec_dot_ref activations"));
  if (nb == 0) return 0.0f;
  return op->dot(w_row.data(), act_row.data(), nb);
}

Result<float> dot_f32_ref(GgmlType weight_type, std::span<const uint8_t> w_row,
                          std::span<const float> x) {
  const auto* op = find_ops(weight_type);
  if (op == nullptr || op->dot == nullptr) {
    return unimplemented("dot_f32_ref: weight type " + type_name(weight_type) +
                         " is not supported");
  }
  const auto act_bytes = ggml_row_bytes(op->dot_type, x.size());
  if (!act_bytes) {
    return invalid_argument("dot_f32_ref: " + std::to_string(x.size()) +
                            " activations is not a multiple of the " + type_name(op->dot_type) +
                            " block size");
  }
  std::vector<uint8_t> act(static_cast<size_t>(*act_bytes));
  GENIEX_TRY(quantize_row(op->dot_type, x, act));
  return vec_dot_ref(weight_type, w_row, act, x.size());
}

}  // namespace geniex::quant
