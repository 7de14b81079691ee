// Where a subcommand finds its model when the user names none.
#pragma once

#include <string>

#include "core/status.h"

namespace geniex::cli {

/// The default model file name under ~/.cache/geniex/models/.
inline constexpr const char* kDefaultModelFile = "gemma-3-270m-q4_k_m.gguf";

/// $GENIEX_MODEL if set, else ~/.cache/geniex/models/gemma-3-270m-q4_k_m.gguf. NOT_FOUND (with
/// a hint to run scripts/setup.sh) when that file does not exist.
Result<std::string> default_model_path();

}  // namespace geniex::cli
