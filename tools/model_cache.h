// Where downloaded and assembled models live: the one place the CLI computes the cache folder,
// so `run`, `chat`, `serve`, `list` and `pull` agree with scripts/setup.sh.
#pragma once

#include <string>

#include "core/status.h"

namespace geniex::cli {

/// `${XDG_CACHE_HOME:-$HOME/.cache}/geniex/models`, spelled as scripts/setup.sh spells it (an
/// empty XDG_CACHE_HOME counts as unset). The folder need not exist. NOT_FOUND when neither
/// variable is set.
Result<std::string> model_cache_dir();

}  // namespace geniex::cli
