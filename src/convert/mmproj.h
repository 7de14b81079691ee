// The vision projector file ("mmproj", GGUF architecture "clip") of a vision-language
// checkpoint, as llama.cpp's `convert_hf_to_gguf.py --mmproj` writes it. LFM2-VL
// (Lfm2VlForConditionalGeneration: SigLIP2 encoder + LFM2 projector) so far.
#pragma once

#include <string>

#include "convert/safetensors.h"
#include "convert/tensor_encode.h"
#include "convert/text_params.h"
#include "core/status.h"

namespace geniex::convert {

/// What the projector conversion wrote.
struct MmprojReport {
  size_t n_tensors = 0;
  uint64_t n_params = 0;
};

/// Writes the projector of `cfg`'s checkpoint to `out_path` (temporary file + rename).
/// `out` must be resolved; `name` is general.name. kUnimplemented for checkpoints without a
/// projector converter (naming the class).
Result<MmprojReport> convert_mmproj(const std::string& hf_dir, const HfConfig& cfg,
                                    const SafetensorsModel& st, OutType out,
                                    const std::string& name, const std::string& out_path);

}  // namespace geniex::convert
