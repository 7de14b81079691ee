#include "server/embeddings_handler.h"

#include <string>
#include <utility>
#include <vector>

#include "server/access_log.h"
#include "server/api_error.h"
#include "server/embeddings_request.h"
#include "server/model_route.h"
#include "server/router.h"

namespace geniex::server {
namespace {

HttpResponse send_error(const ApiError& e) { return json_response(e.status, e.body()); }

}  // namespace

HttpResponse handle_embeddings(ServerState& st, HttpRequest& req) {
  if (st.draining.load()) return send_error(shutting_down());
  auto parsed = parse_embeddings_request(req.body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(*e);
  EmbeddingsRequest r = std::move(std::get<EmbeddingsRequest>(parsed));
  auto resolved = resolve_model(st, r.model);  // several models served: the one named
  if (auto* e = std::get_if<ApiError>(&resolved)) return send_error(*e);
  const ModelRef ref = std::move(std::get<ModelRef>(resolved));
  Model& model = *ref.model;
  const ModelInfo& info = model.info();
  if (r.dimensions > info.n_embd) {
    return send_error(
        invalid_value("dimensions", "this model's embeddings have " + std::to_string(info.n_embd) +
                                        " dimensions; got " + std::to_string(r.dimensions) + "."));
  }
  // Tokenize first: an input over the context is refused before any work.
  std::vector<std::vector<int32_t>> inputs = std::move(r.token_inputs);
  for (size_t i = 0; i < r.texts.size(); ++i) {
    auto ids = model.tokenize(r.texts[i], /*add_special=*/true, /*parse_special=*/false);
    const std::string p = r.texts.size() == 1 ? "input" : "input[" + std::to_string(i) + "]";
    if (!ids.ok()) return send_error(invalid_value(p, ids.status().message()));
    if (ids->empty()) return send_error(invalid_value(p, "the input has no tokens."));
    inputs.push_back(std::move(*ids));
  }
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    total += static_cast<int64_t>(inputs[i].size());
    if (static_cast<int64_t>(inputs[i].size()) > info.n_ctx) {
      const std::string p = inputs.size() == 1 ? "input" : "input[" + std::to_string(i) + "]";
      ApiError e = invalid_value(p, "the input is " + std::to_string(inputs[i].size()) +
                                        " tokens but this server's context holds " +
                                        std::to_string(info.n_ctx) + ".");
      e.code = "context_length_exceeded";
      return send_error(e);
    }
  }
  this_request().prompt_tokens = total;
  Admission::Slot slot;
  switch (st.admission.acquire(slot)) {
    case Admission::Outcome::kAdmitted: break;
    case Admission::Outcome::kQueueFull:
      return send_error(queue_full(st.admission.parallel(), st.admission.queue_capacity()));
    case Admission::Outcome::kClosed: return send_error(shutting_down());
  }
  EmbeddingConfig cfg;
  cfg.dimensions = r.dimensions;
  auto e = model.embed(std::span<const std::vector<int32_t>>(inputs), cfg);
  if (!e.ok()) {
    const StatusCode c = e.status().code();
    if (c == StatusCode::kInvalidArgument || c == StatusCode::kOutOfRange) {
      return send_error(invalid_value("input", e.status().message()));
    }
    return send_error(internal_error(e.status().message()));
  }
  st.metrics.add_prompt_tokens(e->prompt_tokens);
  return json_response(200, embeddings_response(*e, ref.id, r.base64).dump());
}

}  // namespace geniex::server
