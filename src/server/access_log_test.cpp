#include "server/access_log.h"

#include <gtest/gtest.h>

namespace geniex::server {
namespace {

TEST(AccessLog, CompletionLineHasCountsAndMilliseconds) {
  AccessRecord r{"POST", "/v1/chat/completions", 200, 12, 34, 567.84, false};
  EXPECT_EQ(access_log_line(r),
            "geniex serve: access: POST /v1/chat/completions 200 in=12 out=34 ms=567.8");
  r.client_closed = true;
  EXPECT_EQ(access_log_line(r),
            "geniex serve: access: POST /v1/chat/completions 200 in=12 out=34 ms=567.8 "
            "client-closed");
}

TEST(AccessLog, NonGenerationAndUnroutedRequestsUseDashes) {
  EXPECT_EQ(access_log_line({"GET", "/health", 200, -1, -1, 0.31, false}),
            "geniex serve: access: GET /health 200 in=- out=- ms=0.3");
  EXPECT_EQ(access_log_line({"", "", 400, -1, -1, -1, false}),
            "geniex serve: access: - - 400 in=- out=- ms=-");
}

TEST(AccessLog, PathCannotForgeLinesAndIsBounded) {
  const std::string line =
      access_log_line({"GET", "/a b\n\"x\"%\\\x01\xff", 404, -1, -1, 1, false});
  EXPECT_EQ(line, "geniex serve: access: GET /a%20b%0A%22x%22%25%5C%01%FF 404 in=- out=- ms=1.0");
  const std::string long_path(1000, 'a');
  const std::string l2 = access_log_line({"GET", long_path, 404, -1, -1, 1, false});
  EXPECT_NE(l2.find(std::string(256, 'a') + "... 404"), std::string::npos);
  EXPECT_EQ(l2.find(std::string(257, 'a')), std::string::npos);
}

}  // namespace
}  // namespace geniex::server
