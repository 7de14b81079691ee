#include "server/router.h"

#include "server/api_error.h"

namespace geniex::server {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

HttpResponse json_response(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

void Router::add(std::string method, std::string pattern, RouteHandler handler) {
  constexpr std::string_view kParam = "{param}";
  Route r{std::move(method), std::move(pattern), false, std::move(handler)};
  if (r.prefix.ends_with(kParam)) {
    r.prefix.resize(r.prefix.size() - kParam.size());
    r.has_param = true;
  }
  routes_.push_back(std::move(r));
}

HttpResponse Router::dispatch(HttpRequest& req) const {
  bool path_known = false;
  for (const Route& r : routes_) {
    std::string_view param;
    if (r.has_param) {
      if (req.path.size() <= r.prefix.size() || !req.path.starts_with(r.prefix)) continue;
      param = std::string_view(req.path).substr(r.prefix.size());
    } else if (req.path != r.prefix) {
      continue;
    }
    path_known = true;
    // HEAD is GET without the body (the transport drops it).
    if (r.method == req.method || (req.method == "HEAD" && r.method == "GET")) {
      return r.handler(req, param);
    }
  }
  const ApiError e =
      path_known ? method_not_allowed(req.method, req.path) : route_not_found(req.method, req.path);
  return json_response(e.status, e.body());
}

}  // namespace geniex::server
