// `geniex imatrix -m MODEL -f TEXT [-o imatrix.gguf] [-c 512] [--chunks N]`: llama-imatrix's
// importance matrix in its GGUF format (the work is in src/quantize/imatrix_collect).
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_imatrix(CLI::App& parent);

}  // namespace geniex::cli
