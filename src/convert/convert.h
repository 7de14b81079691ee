// `geniex convert`: a Hugging Face checkpoint directory (config.json, *.safetensors,
// tokenizer files) to one GGUF file, compatible with llama.cpp's convert_hf_to_gguf.py output
// (same metadata keys and values, same tensor names, types, shapes and bytes; see
// docs/convert.md for the provenance keys that differ).
#pragma once

#include <cstdint>
#include <string>

#include "convert/tensor_encode.h"
#include "core/status.h"

namespace geniex::convert {

/// Options of a conversion.
struct ConvertOptions {
  OutType outtype = OutType::kAuto;  ///< weight type of 2-D tensors
  std::string tokenizer_pre;         ///< BPE pre-tokenizer name; empty = detect
  std::string model_name;            ///< general.name; empty = from the directory name
  std::string mmproj_path;           ///< also write the vision projector here (LFM2-VL)
};

/// What a conversion did.
struct ConvertReport {
  std::string hf_arch;               ///< config.json architectures[0]
  std::string gguf_arch;             ///< general.architecture
  OutType outtype = OutType::kAuto;  ///< resolved (never kAuto)
  size_t n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t file_bytes = 0;
  size_t mmproj_tensors = 0;  ///< projector tensors written (0 without mmproj_path)
};

/// Converts `hf_dir` to `out_path` (and its vision projector to `opts.mmproj_path` if set).
/// Each file is written to a temporary name beside it and renamed at the end: on any error
/// nothing is left at `out_path` (an existing file there is untouched); the text model is fully
/// built before the projector is written, and the projector is removed again if writing the
/// text file then fails. Missing files and unsupported architectures are errors naming them.
Result<ConvertReport> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                         const ConvertOptions& opts = {});

/// gguf-py's size label: "373K", "1.2B" (two significant digits at least).
std::string size_label(uint64_t n_params);
/// general.name from a directory name, as llama.cpp's metadata heuristics title-case it.
std::string name_from_dir(const std::string& dir);

}  // namespace geniex::convert
