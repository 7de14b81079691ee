// Which model a request names: with one model served, any name means it (as llama-server);
// with several (a ModelRegistry), the name picks one, "" the default, an unknown name is a 404
// in OpenAI's shape, and the model is loaded on first use.
#pragma once

#include <memory>
#include <string>

#include "server/api_error.h"
#include "server/model_registry.h"
#include "server/server_state.h"

namespace geniex::server {

struct ModelRef {
  std::shared_ptr<LoadedModel> lease;  ///< keeps a registry model alive for the request
  Model* model = nullptr;
  TokenTexts* texts = nullptr;
  std::string id;  ///< what replies report as "model"
};

ApiResult<ModelRef> resolve_model(ServerState& st, const std::string& requested);

}  // namespace geniex::server
