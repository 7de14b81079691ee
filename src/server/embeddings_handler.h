// POST /v1/embeddings: parse (embeddings_request.h), take an admission slot, run Model::embed
// (the inputs batched into shared forward passes), answer in OpenAI's shape. Bad input, an input
// over the context and ids outside the vocabulary are 400s; the model stays usable.
#pragma once

#include "server/http_types.h"
#include "server/server_state.h"

namespace geniex::server {

HttpResponse handle_embeddings(ServerState& state, HttpRequest& req);

}  // namespace geniex::server
