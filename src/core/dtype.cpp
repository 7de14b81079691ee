#include "core/dtype.h"

#include <array>

namespace geniex {
namespace {

// Sizes from ggml-common.h (see shared/spec/GGUF.md §2.1). Q8_1 is the C struct size (36).
constexpr std::array<GgmlTypeTraits, 35> kTable = {{
    {GgmlType::kF32, "F32", 1, 4, false},
    {GgmlType::kF16, "F16", 1, 2, false},
    {GgmlType::kQ4_0, "Q4_0", 32, 18, true},
    {GgmlType::kQ4_1, "Q4_1", 32, 20, true},
    {GgmlType::kQ5_0, "Q5_0", 32, 22, true},
    {GgmlType::kQ5_1, "Q5_1", 32, 24, true},
    {GgmlType::kQ8_0, "Q8_0", 32, 34, true},
    {GgmlType::kQ8_1, "Q8_1", 32, 36, true},
    {GgmlType::kQ2_K, "Q2_K", 256, 84, true},
    {GgmlType::kQ3_K, "Q3_K", 256, 110, true},
    {GgmlType::kQ4_K, "Q4_K", 256, 144, true},
    {GgmlType::kQ5_K, "Q5_K", 256, 176, true},
    {GgmlType::kQ6_K, "Q6_K", 256, 210, true},
    {GgmlType::kQ8_K, "Q8_K", 256, 292, true},
    {GgmlType::kIQ2_XXS, "IQ2_XXS", 256, 66, true},
    {GgmlType::kIQ2_XS, "IQ2_XS", 256, 74, true},
    {GgmlType::kIQ3_XXS, "IQ3_XXS", 256, 98, true},
    {GgmlType::kIQ1_S, "IQ1_S", 256, 50, true},
    {GgmlType::kIQ4_NL, "IQ4_NL", 32, 18, true},
    {GgmlType::kIQ3_S, "IQ3_S", 256, 110, true},
    {GgmlType::kIQ2_S, "IQ2_S", 256, 82, true},
    {GgmlType::kIQ4_XS, "IQ4_XS", 256, 136, true},
    {GgmlType::kI8, "I8", 1, 1, false},
    {GgmlType::kI16, "I16", 1, 2, false},
    {GgmlType::kI32, "I32", 1, 4, false},
    {GgmlType::kI64, "I64", 1, 8, false},
    {GgmlType::kF64, "F64", 1, 8, false},
    {GgmlType::kIQ1_M, "IQ1_M", 256, 56, true},
    {GgmlType::kBF16, "BF16", 1, 2, false},
    {GgmlType::kTQ1_0, "TQ1_0", 256, 54, true},
    {GgmlType::kTQ2_0, "TQ2_0", 256, 66, true},
    {GgmlType::kMXFP4, "MXFP4", 32, 17, true},
    {GgmlType::kNVFP4, "NVFP4", 64, 36, true},
    {GgmlType::kQ1_0, "Q1_0", 128, 18, true},
    {GgmlType::kQ2_0, "Q2_0", 64, 18, true},
}};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t raw_id) {
  for (const auto& t : kTable) {
    if (static_cast<uint32_t>(t.type) == raw_id) return t;
  }
  return std::nullopt;
}

const GgmlTypeTraits& traits(GgmlType type) {
  for (const auto& t : kTable) {
    if (t.type == type) return t;
  }
  return kTable[0];  // unreachable for valid enum values
}

std::string_view ggml_type_name(GgmlType type) { return traits(type).name; }

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const auto& t : kTable) {
    if (t.name == name) return t.type;
  }
  return std::nullopt;
}

std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n) {
  const auto& t = traits(type);
  if (n % t.block_size != 0) return std::nullopt;
  return n / t.block_size * t.type_size;
}

}  // namespace geniex
