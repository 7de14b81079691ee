#include "server/routes_info.h"

#include <httplib.h>

#include "server/chat_page.h"
#include "server/response.h"

namespace geniex::server {

Json model_json(const ServerOptions& o) {
  Json m;
  m["id"] = o.model_id;
  m["object"] = "model";
  m["created"] = o.created;
  m["owned_by"] = "geniex";
  return m;
}

void add_info_routes(httplib::Server& http, ServerState& st) {
  http.Get("/v1/models", [&st](const httplib::Request&, httplib::Response& res) {
    Json j;
    j["object"] = "list";
    j["data"] = Json::array({model_json(st.options)});
    res.set_content(dump(j), "application/json");
  });
  http.Get(R"(/v1/models/(.+))", [&st](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (id != st.options.model_id) {
      const ApiError e = model_not_found(id);
      res.status = e.status;
      res.set_content(e.body(), "application/json");
      return;
    }
    res.set_content(dump(model_json(st.options)), "application/json");
  });
  http.Get("/health", [&st](const httplib::Request&, httplib::Response& res) {
    const bool draining = st.draining.load();
    Json j;
    j["status"] = draining ? "shutting_down" : "ok";
    j["model"] = st.options.model_id;
    j["in_flight"] = st.admission.in_flight();
    j["queued"] = st.admission.queued();
    res.status = draining ? 503 : 200;
    res.set_content(dump(j), "application/json");
  });
  // llama-server's /props, in part: what a client needs to know about this server's defaults.
  http.Get("/props", [&st](const httplib::Request&, httplib::Response& res) {
    const ModelInfo& info = st.model.info();
    Json j;
    j["model"] = st.options.model_id;
    j["n_ctx"] = info.n_ctx;
    j["total_slots"] = st.admission.parallel();
    j["queue"] = st.admission.queue_capacity();
    j["chat_template_origin"] = info.chat_template_origin;
    j["default_generation_settings"] = generation_settings_json(st.options.defaults);
    res.set_content(dump(j), "application/json");
  });
  http.Get("/metrics", [&st](const httplib::Request&, httplib::Response& res) {
    res.set_content(st.metrics.render(st.gauges()), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    const std::string_view page = chat_page_html();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
}

}  // namespace geniex::server
