// The small GET routes: /v1/models, /v1/models/{id}, /health, /props (the model's context and
// chat template origin, the request defaults), /metrics and the chat page at /.
#pragma once

#include "server/api_error.h"
#include "server/server_state.h"

namespace httplib {  // NOLINT(readability-identifier-naming): third-party name
class Server;
}  // namespace httplib

namespace geniex::server {

/// Registers the GET routes on `http`; `state` must outlive it.
void add_info_routes(httplib::Server& http, ServerState& state);

/// The /v1/models entry of the served model.
Json model_json(const ServerOptions& o);

}  // namespace geniex::server
