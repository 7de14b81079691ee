#include "server/routes_info.h"

#include "server/chat_page.h"
#include "server/model_registry.h"
#include "server/response.h"

namespace geniex::server {

Json model_json(const ServerOptions& o, const ModelInfo& info) {
  Json m;
  m["id"] = o.model_id;
  m["object"] = "model";
  m["created"] = o.created;
  m["owned_by"] = "geniex";
  // Not in OpenAI's schema (clients ignore it): what the model takes. "vision": image_url
  // content parts in /v1/chat/completions (a model served with its mmproj file).
  Json caps = Json::array({"chat", "completion"});
  if (!info.mmproj_path.empty()) caps.push_back("vision");
  m["capabilities"] = std::move(caps);
  return m;
}

/// Every model of a registry, loaded or not ("loaded" is ours: whether a request would wait
/// for its load).
Json registry_json(const ServerState& st) {
  Json data = Json::array();
  for (const ModelRegistry::State& s : st.registry->states()) {
    Json m;
    m["id"] = s.id;
    m["object"] = "model";
    m["created"] = st.options.created;
    m["owned_by"] = "geniex";
    m["loaded"] = s.loaded;
    data.push_back(std::move(m));
  }
  return data;
}

void add_info_routes(Router& router, ServerState& st) {
  router.add("GET", "/v1/models", [&st](HttpRequest&, std::string_view) {
    Json j;
    j["object"] = "list";
    j["data"] =
        st.registry ? registry_json(st) : Json::array({model_json(st.options, st.model.info())});
    return json_response(200, dump(j));
  });
  router.add("GET", "/v1/models/{param}", [&st](HttpRequest&, std::string_view id) {
    if (st.registry) {
      for (Json& m : registry_json(st)) {
        if (m["id"] == id) return json_response(200, dump(m));
      }
      const ApiError e = model_not_found(std::string(id));
      return json_response(e.status, e.body());
    }
    if (id != st.options.model_id) {
      const ApiError e = model_not_found(std::string(id));
      return json_response(e.status, e.body());
    }
    return json_response(200, dump(model_json(st.options, st.model.info())));
  });
  router.add("GET", "/health", [&st](HttpRequest&, std::string_view) {
    const bool draining = st.draining.load();
    Json j;
    j["status"] = draining ? "shutting_down" : "ok";
    j["model"] = st.options.model_id;
    j["in_flight"] = st.admission.in_flight();
    j["queued"] = st.admission.queued();
    return json_response(draining ? 503 : 200, dump(j));
  });
  // llama-server's /props, in part: what a client needs to know about this server's defaults.
  router.add("GET", "/props", [&st](HttpRequest&, std::string_view) {
    const ModelInfo& info = st.model.info();
    Json j;
    j["model"] = st.options.model_id;
    j["n_ctx"] = info.n_ctx;
    j["total_slots"] = st.admission.parallel();
    j["queue"] = st.admission.queue_capacity();
    j["chat_template_origin"] = info.chat_template_origin;
    // llama-server's field: whether chat requests may carry images.
    j["modalities"] = {{"vision", !info.mmproj_path.empty()}, {"audio", false}};
    j["default_generation_settings"] = generation_settings_json(st.options.defaults);
    return json_response(200, dump(j));
  });
  router.add("GET", "/metrics", [&st](HttpRequest&, std::string_view) {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = st.metrics.render(st.gauges());
    return r;
  });
  router.add("GET", "/", [](HttpRequest&, std::string_view) {
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::string(chat_page_html());
    return r;
  });
}

}  // namespace geniex::server
