// The route table: exact paths, the {param} suffix, 404 for unknown paths, 405 for a known path
// with another method, and the header lookup of HttpRequest.
#include "server/router.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace geniex::server {
namespace {

HttpRequest request(std::string method, std::string path) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

Router table() {
  Router r;
  r.add("GET", "/health", [](HttpRequest&, std::string_view) { return json_response(200, "h"); });
  r.add("POST", "/v1/completions",
        [](HttpRequest&, std::string_view) { return json_response(200, "c"); });
  r.add("GET", "/v1/models/{param}",
        [](HttpRequest&, std::string_view id) { return json_response(200, std::string(id)); });
  return r;
}

TEST(Router, ExactPathsAndParam) {
  const Router r = table();
  auto health = request("GET", "/health");
  EXPECT_EQ(r.dispatch(health).body, "h");
  auto head = request("HEAD", "/health");
  EXPECT_EQ(r.dispatch(head).status, 200);
  auto model = request("GET", "/v1/models/org/name");
  EXPECT_EQ(r.dispatch(model).body, "org/name");
}

TEST(Router, UnknownPathIs404AndOtherMethodIs405) {
  const Router r = table();
  auto unknown = request("GET", "/v1/nothing");
  HttpResponse res = r.dispatch(unknown);
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(nlohmann::json::parse(res.body)["error"]["code"], "unknown_url");
  auto empty_param = request("GET", "/v1/models/");
  EXPECT_EQ(r.dispatch(empty_param).status, 404);
  auto wrong = request("GET", "/v1/completions");
  res = r.dispatch(wrong);
  EXPECT_EQ(res.status, 405);
  EXPECT_EQ(nlohmann::json::parse(res.body)["error"]["code"], "method_not_allowed");
}

TEST(HttpRequest, HeaderLookupIgnoresCase) {
  HttpRequest r;
  r.headers = {{"Content-Encoding", "gzip"}, {"content-encoding", "br"}};
  EXPECT_EQ(r.header("CONTENT-ENCODING"), "gzip");
  EXPECT_EQ(r.header("Range"), "");
  EXPECT_TRUE(iequals("Chunked", "chunked"));
  EXPECT_FALSE(iequals("chunk", "chunked"));
}

}  // namespace
}  // namespace geniex::server
