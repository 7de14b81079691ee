// `geniex convert HF_DIR -o OUT.gguf [--outtype f32|f16|bf16|q8_0|auto] [--tokenizer-pre NAME]`:
// a Hugging Face checkpoint directory to GGUF (the work is in src/convert; this parses flags
// and prints the summary).
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_convert(CLI::App& parent);

}  // namespace geniex::cli
