#include "server/model_route.h"

namespace geniex::server {

ApiResult<ModelRef> resolve_model(ServerState& st, const std::string& requested) {
  if (st.registry == nullptr) return ModelRef{nullptr, &st.model, &st.texts, st.options.model_id};
  const std::string id = requested.empty() ? st.options.model_id : requested;
  if (!st.registry->serves(id)) return model_not_found(id);
  auto loaded = st.registry->acquire(id);
  if (!loaded.ok())
    return internal_error("model '" + id + "' failed to load: " + loaded.status().message());
  std::shared_ptr<LoadedModel> lm = std::move(*loaded);
  Model* m = &lm->model;
  TokenTexts* t = &lm->texts;
  return ModelRef{std::move(lm), m, t, id};
}

}  // namespace geniex::server
