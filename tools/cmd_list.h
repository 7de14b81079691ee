// `geniex list [--json]`: the GGUF models in the model cache (model_cache.h) with size,
// architecture, quantization, parameter count and whether the file carries its own chat
// template. Reads headers only; an unreadable file is a row with an error, never a failure.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_list(CLI::App& parent);

}  // namespace geniex::cli
