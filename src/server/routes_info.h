// The small GET routes: /v1/models, /v1/models/{id}, /health, /props (the model's context and
// chat template origin, the request defaults), /metrics and the chat page at /.
#pragma once

#include "server/api_error.h"
#include "server/router.h"
#include "server/server_state.h"

namespace geniex::server {

/// Adds the GET routes to `router`; `state` must outlive it.
void add_info_routes(Router& router, ServerState& state);

/// The /v1/models entry of the served model: OpenAI's fields and "capabilities" ("chat",
/// "completion", and "vision" when it takes images).
Json model_json(const ServerOptions& o, const ModelInfo& info);

}  // namespace geniex::server
