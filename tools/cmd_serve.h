// geniex serve: an OpenAI-compatible HTTP server (src/server) over one model.
#pragma once

#include <string>

#include "command.h"
#include "core/status.h"

namespace geniex::cli {

/// Where `geniex serve` listens when no flag says otherwise: $GENIEX_HOST and $GENIEX_PORT, else
/// 127.0.0.1:18181 (geniex health's defaults). A bad $GENIEX_PORT is kInvalidArgument.
struct ServeEndpoint {
  std::string host = "127.0.0.1";
  int port = 18181;
};
Result<ServeEndpoint> serve_endpoint_from_env();

Command register_serve(CLI::App& parent);

}  // namespace geniex::cli
