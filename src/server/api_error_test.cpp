// Every error the server sends has OpenAI's shape and the right status.
#include "server/api_error.h"

#include <gtest/gtest.h>

namespace geniex::server {
namespace {

TEST(ApiError, ShapeWithNullsForAbsentFields) {
  const Json j = Json::parse(malformed_body("x").body());
  ASSERT_TRUE(j.contains("error"));
  const Json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_TRUE(e.contains("param") && e["param"].is_null());
  EXPECT_TRUE(e.contains("code") && e["code"].is_null());
}

TEST(ApiError, StatusesAndCodes) {
  EXPECT_EQ(invalid_type("temperature", "a number").status, 400);
  EXPECT_EQ(invalid_type("temperature", "a number").param.value_or(""), "temperature");
  EXPECT_EQ(unauthorized().status, 401);
  EXPECT_EQ(unauthorized().type, "authentication_error");
  EXPECT_EQ(model_not_found("x").status, 404);
  EXPECT_EQ(model_not_found("x").code.value_or(""), "model_not_found");
  EXPECT_EQ(route_not_found("GET", "/x").status, 404);
  EXPECT_EQ(body_too_large(10).status, 413);
  EXPECT_EQ(queue_full(1, 2).status, 429);
  EXPECT_EQ(shutting_down().status, 503);
  EXPECT_EQ(Json::parse(model_not_found("x").body())["error"]["param"], "model");
}

}  // namespace
}  // namespace geniex::server
