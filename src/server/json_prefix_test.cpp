// The JSON-object prefix recognizer used for response_format json_object.
#include "server/json_prefix.h"

#include <gtest/gtest.h>

#include <string>

namespace geniex::server {
namespace {

bool accepts(const std::string& s) {
  JsonPrefix p;
  return p.feed(s);
}
bool complete(const std::string& s) {
  JsonPrefix p;
  return p.feed(s) && p.complete();
}

TEST(JsonPrefix, CompleteObjects) {
  for (const char* s : {"{}", "{\"a\":1}", "{\"a\": [1, 2.5, -3e+2, 0, true, false, null, \"x\"]}",
                        "{\"k\":{\"n\":{\"m\":[]}}}", "{\"u\":\"\\u00e9\\n\\\"\"}",
                        "{\"s\":\"caf\xC3\xA9\"}", "{ \"a\" : 1 , \"b\" : 2 }"}) {
    EXPECT_TRUE(complete(s)) << s;
  }
}

TEST(JsonPrefix, PrefixesAreAcceptedButNotComplete) {
  for (const char* s : {"{", "{\"a", "{\"a\":", "{\"a\": [1, 2", "{\"a\": tr", "{\"a\": -",
                        "{\"a\": 1.", "{\"a\": \"x\\", "{\"a\":\"\\u00"}) {
    EXPECT_TRUE(accepts(s)) << s;
    EXPECT_FALSE(complete(s)) << s;
  }
}

TEST(JsonPrefix, Rejections) {
  for (const char* s :
       {" {", "[1]", "\"x\"", "{a", "{\"a\" 1", "{\"a\":1,}", "{\"a\":01", "{\"a\":tru e",
        "{\"a\":[1,]", "{\"a\":1]", "{}x", "{} ", "{\"a\":\"\x01\"}", "{\"a\":\"\\x\"}",
        "{\"a\":1.e5}", "{\"a\":-x", "{\"a\":\xC3\xA9}"}) {
    EXPECT_FALSE(accepts(s)) << s;
  }
}

TEST(JsonPrefix, FailedFeedChangesNothing) {
  JsonPrefix p;
  ASSERT_TRUE(p.feed("{\"a\":"));
  EXPECT_FALSE(p.feed("1}x"));
  EXPECT_TRUE(p.feed("2}"));
  EXPECT_TRUE(p.complete());
  EXPECT_FALSE(p.feed("\n"));
}

TEST(JsonPrefix, WhitespaceRunsAndDepthAreBounded) {
  JsonPrefix p;
  ASSERT_TRUE(p.feed("{"));
  EXPECT_FALSE(p.feed(std::string(JsonPrefix::kMaxWhitespaceRun + 1, '\n')));
  EXPECT_TRUE(p.feed(std::string(JsonPrefix::kMaxWhitespaceRun, ' ')));
  std::string deep = "{\"a\":";
  for (size_t i = 0; i < JsonPrefix::kMaxDepth; ++i) deep += "[";
  EXPECT_FALSE(accepts(deep));
}

}  // namespace
}  // namespace geniex::server
