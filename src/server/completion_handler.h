// POST /v1/chat/completions and /v1/completions: parse, check the model, build the prompt,
// take an admission slot, then generate — as one JSON response or as Server-Sent Events; the
// engine batches concurrent generations into shared forward passes. A client that goes away
// mid-stream cancels its generation (the token callback returns false as soon as a write fails) and
// frees its slot.
#pragma once

#include "server/request.h"
#include "server/server_state.h"

namespace httplib {  // NOLINT(readability-identifier-naming): third-party name
struct Request;
struct Response;
}  // namespace httplib

namespace geniex::server {

void handle_completion(ServerState& state, const httplib::Request& req, httplib::Response& res,
                       Endpoint endpoint);

}  // namespace geniex::server
