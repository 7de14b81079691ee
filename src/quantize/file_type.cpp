#include "quantize/file_type.h"

#include <cctype>

namespace geniex::quantize {
namespace {

struct Entry {
  std::string_view name;
  FileType ftype;
  GgmlType type;
  bool alias;
};

// clang-format off
constexpr Entry kTypes[] = {
    {"Q4_0",   FileType::kQ4_0,   GgmlType::kQ4_0,   false},
    {"Q4_1",   FileType::kQ4_1,   GgmlType::kQ4_1,   false},
    {"Q5_0",   FileType::kQ5_0,   GgmlType::kQ5_0,   false},
    {"Q5_1",   FileType::kQ5_1,   GgmlType::kQ5_1,   false},
    {"Q2_K",   FileType::kQ2_K,   GgmlType::kQ2_K,   false},
    {"Q3_K",   FileType::kQ3_K_M, GgmlType::kQ3_K,   true},
    {"Q3_K_S", FileType::kQ3_K_S, GgmlType::kQ3_K,   false},
    {"Q3_K_M", FileType::kQ3_K_M, GgmlType::kQ3_K,   false},
    {"Q3_K_L", FileType::kQ3_K_L, GgmlType::kQ3_K,   false},
    {"IQ4_NL", FileType::kIQ4_NL, GgmlType::kIQ4_NL, false},
    {"IQ4_XS", FileType::kIQ4_XS, GgmlType::kIQ4_XS, false},
    {"Q4_K",   FileType::kQ4_K_M, GgmlType::kQ4_K,   true},
    {"Q4_K_S", FileType::kQ4_K_S, GgmlType::kQ4_K,   false},
    {"Q4_K_M", FileType::kQ4_K_M, GgmlType::kQ4_K,   false},
    {"Q5_K",   FileType::kQ5_K_M, GgmlType::kQ5_K,   true},
    {"Q5_K_S", FileType::kQ5_K_S, GgmlType::kQ5_K,   false},
    {"Q5_K_M", FileType::kQ5_K_M, GgmlType::kQ5_K,   false},
    {"Q6_K",   FileType::kQ6_K,   GgmlType::kQ6_K,   false},
    {"Q8_0",   FileType::kQ8_0,   GgmlType::kQ8_0,   false},
    {"F16",    FileType::kF16,    GgmlType::kF16,    false},
    {"BF16",   FileType::kBF16,   GgmlType::kBF16,   false},
    {"F32",    FileType::kF32,    GgmlType::kF32,    false},
};

constexpr GgmlType kTensorTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,   GgmlType::kQ4_1,
    GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K,   GgmlType::kQ3_K,
    GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS,
};
// clang-format on

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

Result<FileTypeInfo> parse_file_type(std::string_view name) {
  for (const Entry& e : kTypes) {
    if (iequals(e.name, name)) {
      std::string_view canonical = e.name;
      if (e.alias) canonical = e.name == "Q3_K" ? "Q3_K_M" : e.name == "Q4_K" ? "Q4_K_M" : "Q5_K_M";
      return FileTypeInfo{canonical, e.ftype, e.type};
    }
  }
  std::string list;
  for (const std::string& n : file_type_names()) list += (list.empty() ? "" : ", ") + n;
  return invalid_argument("unknown quantization type '" + std::string(name) + "' (valid: " + list +
                          ")");
}

std::vector<std::string> file_type_names() {
  std::vector<std::string> out;
  for (const Entry& e : kTypes) {
    if (!e.alias) out.emplace_back(e.name);
  }
  return out;
}

Result<GgmlType> parse_tensor_type(std::string_view name) {
  std::string list;
  for (GgmlType t : kTensorTypes) {
    if (iequals(ggml_type_name(t), name)) return t;
    list += (list.empty() ? "" : ", ") + std::string(ggml_type_name(t));
  }
  return invalid_argument("unknown tensor type '" + std::string(name) + "' (valid: " + list + ")");
}

}  // namespace geniex::quantize
