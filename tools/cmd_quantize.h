// `geniex quantize IN.gguf OUT.gguf TYPE [--imatrix FILE] [-t N] [--pure]
// [--output-tensor-type T] [--token-embedding-type T] [--leave-output-tensor]`: llama-quantize's
// job and output (the work is in src/quantize; this parses flags, shows progress and prints the
// summary).
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_quantize(CLI::App& parent);

}  // namespace geniex::cli
