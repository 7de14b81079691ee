// Tensor data for the converter: a safetensors tensor decoded to f32, and f32 encoded to the
// output type with llama.cpp's converter rules (which tensors stay F32, Q8_0 falling back to
// F16 when rows do not split into blocks).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/safetensors.h"
#include "core/dtype.h"
#include "core/status.h"

namespace geniex::convert {

/// --outtype values. kAuto: BF16 or F16 after the first 2-D source tensor's dtype, else F16.
enum class OutType { kAuto, kF32, kF16, kBF16, kQ8_0 };

/// "f32", "f16", "bf16", "q8_0", "auto".
Result<OutType> parse_outtype(std::string_view s);
std::string_view outtype_name(OutType t);
/// general.file_type (llama_ftype) of a resolved output type.
uint32_t file_type_of(OutType t);

/// The source's values as f32 (F32, F16 and BF16 sources; others are kUnimplemented).
Result<std::vector<float>> decode_to_f32(const StTensor& t);

/// The GGUF type llama.cpp's converter gives a tensor: F32 for 1-D tensors, norms and
/// anything not ending in ".weight"; else the output type (Q8_0 -> F16 when the row length is
/// not a multiple of 32). `out` must be resolved (not kAuto).
GgmlType choose_type(std::string_view gguf_name, size_t n_dims, uint64_t row_length, OutType out);

/// `values` encoded as `type` (F32, F16, BF16 or Q8_0); rows of `row_length` elements.
Result<std::vector<uint8_t>> encode(std::span<const float> values, uint64_t row_length,
                                    GgmlType type);

}  // namespace geniex::convert
