// ggml tensor element types as stored in GGUF (ids are the on-disk values) and their
// block geometry. The table is the single source of truth for sizes everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace geniex {

/// On-disk ggml type id. Only ids listed here are valid; removed ids (4, 5, 31-33, 36-38)
/// are not.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
  kQ2_0 = 42,
};

/// Geometry of one type: `block_size` elements take `type_size` bytes.
struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;  ///< as gguf-py spells it: "F32", "Q4_K", "IQ4_NL", ...
  uint32_t block_size;
  uint32_t type_size;
  bool quantized;
};

/// Traits of a raw on-disk id, or nullopt when the id is not a known type.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t raw_id);

/// Traits of a known type (never fails).
const GgmlTypeTraits& traits(GgmlType type);

/// Name of a type, e.g. "Q4_K".
std::string_view ggml_type_name(GgmlType type);

/// Looks a type up by name (case-sensitive, gguf-py spelling).
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

/// Bytes of a row of `n` elements, or nullopt if `n` is not a multiple of the block size.
std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n);

}  // namespace geniex
