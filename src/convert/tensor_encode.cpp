#include "convert/tensor_encode.h"

#include <cstring>

#include "core/fp16.h"
#include "quant/quant.h"

namespace geniex::convert {

Result<OutType> parse_outtype(std::string_view s) {
  if (s == "auto") return OutType::kAuto;
  if (s == "f32") return OutType::kF32;
  if (s == "f16") return OutType::kF16;
  if (s == "bf16") return OutType::kBF16;
  if (s == "q8_0") return OutType::kQ8_0;
  return invalid_argument("unknown output type '" + std::string(s) +
                          "' (one of f32, f16, bf16, q8_0, auto)");
}

std::string_view outtype_name(OutType t) {
  switch (t) {
    case OutType::kAuto: return "auto";
    case OutType::kF32: return "f32";
    case OutType::kF16: return "f16";
    case OutType::kBF16: return "bf16";
    case OutType::kQ8_0: return "q8_0";
  }
  return "?";
}

uint32_t file_type_of(OutType t) {
  switch (t) {
    case OutType::kF32: return 0;    // LLAMA_FTYPE_ALL_F32
    case OutType::kF16: return 1;    // LLAMA_FTYPE_MOSTLY_F16
    case OutType::kQ8_0: return 7;   // LLAMA_FTYPE_MOSTLY_Q8_0
    case OutType::kBF16: return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    case OutType::kAuto: break;
  }
  return 1;
}

Result<std::vector<float>> decode_to_f32(const StTensor& t) {
  std::vector<float> out(t.n_elements);
  const uint8_t* p = t.data.data();
  switch (t.dtype) {
    case StDType::kF32:
      if (!out.empty()) std::memcpy(out.data(), p, out.size() * sizeof(float));
      return out;
    case StDType::kF16:
    case StDType::kBF16:
      for (size_t i = 0; i < out.size(); ++i) {
        uint16_t h = 0;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = t.dtype == StDType::kF16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
      }
      return out;
    default: break;
  }
  return unimplemented("tensor '" + t.name + "' has dtype " + std::string(st_dtype_name(t.dtype)) +
                       "; only F32, F16 and BF16 weights are converted");
}

GgmlType choose_type(std::string_view gguf_name, size_t n_dims, uint64_t row_length, OutType out) {
  if (n_dims <= 1 || gguf_name.ends_with("_norm.weight") || !gguf_name.ends_with(".weight")) {
    return GgmlType::kF32;
  }
  // Kept F32 whatever the output type (llama.cpp's list, the entries our architectures have).
  for (std::string_view s : {".shortconv.conv.weight", ".ssm_conv1d.weight", ".ffn_gate_inp.weight",
                             "position_embd.weight", "token_types.weight"}) {
    if (gguf_name.ends_with(s)) return GgmlType::kF32;
  }
  switch (out) {
    case OutType::kF32: return GgmlType::kF32;
    case OutType::kBF16: return GgmlType::kBF16;
    case OutType::kQ8_0: return row_length % 32 == 0 ? GgmlType::kQ8_0 : GgmlType::kF16;
    case OutType::kF16:
    case OutType::kAuto: break;
  }
  return GgmlType::kF16;
}

Result<std::vector<uint8_t>> encode(std::span<const float> values, uint64_t row_length,
                                    GgmlType type) {
  const auto& tr = traits(type);
  if (row_length == 0 || values.size() % row_length != 0 || row_length % tr.block_size != 0) {
    return invalid_argument("cannot encode " + std::to_string(values.size()) +
                            " values in rows of " + std::to_string(row_length) + " as " +
                            std::string(ggml_type_name(type)));
  }
  const uint64_t n_rows = values.size() / row_length;
  const uint64_t row_bytes = row_length / tr.block_size * tr.type_size;
  std::vector<uint8_t> out(n_rows * row_bytes);
  for (uint64_t r = 0; r < n_rows; ++r) {
    GENIEX_TRY(quant::quantize_row(type, values.subspan(r * row_length, row_length),
                                   std::span<uint8_t>(out).subspan(r * row_bytes, row_bytes)));
  }
  return out;
}

}  // namespace geniex::convert
