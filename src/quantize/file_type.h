// The quantization file types (`geniex quantize ... TYPE`) with llama.cpp's ids
// (llama_ftype, written as general.file_type) and the tensor type each one defaults to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace geniex::quantize {

/// llama.cpp's llama_ftype values for the types we write.
enum class FileType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kIQ4_NL = 25,
  kIQ4_XS = 30,
  kBF16 = 32,
};

struct FileTypeInfo {
  std::string_view name;  ///< canonical spelling, e.g. "Q4_K_M"
  FileType ftype = FileType::kF16;
  GgmlType default_type = GgmlType::kF16;
};

/// The file type named `name` (case-insensitive; Q3_K, Q4_K, Q5_K are aliases of their _M
/// mixtures, as in llama-quantize), or kInvalidArgument listing the valid names.
Result<FileTypeInfo> parse_file_type(std::string_view name);

/// Every canonical name parse_file_type accepts, in llama-quantize's order.
std::vector<std::string> file_type_names();

/// A ggml tensor type by name for --output-tensor-type / --token-embedding-type
/// (case-insensitive: f32, f16, bf16, q4_0, ..., q6_K, iq4_nl, iq4_xs), limited to the types
/// this quantizer writes.
Result<GgmlType> parse_tensor_type(std::string_view name);

}  // namespace geniex::quantize
