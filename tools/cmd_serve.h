// geniex serve: an OpenAI-compatible HTTP server (src/server) over one model.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_serve(CLI::App& parent);

}  // namespace geniex::cli
