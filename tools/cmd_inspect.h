// `geniex inspect [FILE] [--json] [--max-array N]`: dumps a GGUF file's header, metadata
// and tensor table (text like gguf-dump, or one JSON object).
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_inspect(CLI::App& parent);

}  // namespace geniex::cli
