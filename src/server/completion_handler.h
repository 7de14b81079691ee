// POST /v1/chat/completions and /v1/completions: parse, check the model, build the prompt,
// take an admission slot, then generate — as one JSON response or as Server-Sent Events; the
// engine batches concurrent generations into shared forward passes. A client that goes away
// mid-stream cancels its generation (the token callback returns false as soon as a write fails) and
// frees its slot; so does one that closes its connection while waiting for a whole response
// (HttpRequest::peer_gone, polled at each token).
#pragma once

#include "server/http_types.h"
#include "server/request.h"
#include "server/server_state.h"

namespace geniex::server {

/// The response: a whole JSON body, an error, or (stream: true) an SSE producer.
HttpResponse handle_completion(ServerState& state, HttpRequest& req, Endpoint endpoint);

/// POST /apply-template (llama-server's): a chat body's prompt as the model's chat template
/// renders it, tools and tool-call plan included: {"prompt": "..."}. Nothing is generated.
HttpResponse handle_apply_template(ServerState& state, HttpRequest& req);

}  // namespace geniex::server
