// `geniex embed -m MODEL [--pooling P] [--no-normalize] [--json] TEXT... | -f FILE`: one embedding
// vector per text (per line of FILE), pooled as the GGUF declares or as --pooling says.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_embed(CLI::App& parent);

}  // namespace geniex::cli
