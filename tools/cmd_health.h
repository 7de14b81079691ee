// geniex health: asks a running `geniex serve` for GET /health (the container's HEALTHCHECK).
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_health(CLI::App& parent);

}  // namespace geniex::cli
