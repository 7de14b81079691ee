// The route table of geniex serve: exact paths and one-segment parameters ("/v1/models/{id}"),
// per method (HEAD runs the GET route). A path that matches with another method is 405, an
// unknown path 404 (both in OpenAI's error shape, from api_error.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_types.h"

namespace geniex::server {

/// What a route handler gets: the request and the value of the pattern's {param}, if any.
using RouteHandler = std::function<HttpResponse(HttpRequest& req, std::string_view param)>;

class Router {
 public:
  /// `pattern` is an exact path or a prefix ending in "{param}" that matches one non-empty
  /// rest of the path (which may hold '/': model ids do).
  void add(std::string method, std::string pattern, RouteHandler handler);

  /// The handler's response, or the 404/405 error.
  [[nodiscard]] HttpResponse dispatch(HttpRequest& req) const;

 private:
  struct Route {
    std::string method;
    std::string prefix;  ///< the pattern without "{param}"
    bool has_param = false;
    RouteHandler handler;
  };
  std::vector<Route> routes_;
};

/// An HttpResponse carrying an ApiError-shaped JSON body.
HttpResponse json_response(int status, std::string body);

}  // namespace geniex::server
