// Prometheus text of the server metrics.
#include "server/metrics.h"

#include <gtest/gtest.h>

namespace geniex::server {
namespace {

TEST(Metrics, RendersCountersAndGauges) {
  Metrics m;
  m.on_request("/v1/chat/completions", 200);
  m.on_request("/v1/chat/completions", 200);
  m.on_request("/v1/chat/completions", 429);
  m.add_prompt_tokens(12);
  m.add_generated_tokens(5);
  m.observe_ttft(0.5);
  m.on_cancelled();
  const std::string t = m.render({2, 3, 4, 16, 4096});
  EXPECT_NE(t.find("geniex_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 2\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("status=\"429\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("geniex_prompt_tokens_total 12\n"), std::string::npos);
  EXPECT_NE(t.find("geniex_generated_tokens_total 5\n"), std::string::npos);
  EXPECT_NE(t.find("geniex_requests_in_flight 2\n"), std::string::npos);
  EXPECT_NE(t.find("geniex_requests_queued 3\n"), std::string::npos);
  EXPECT_NE(t.find("geniex_requests_cancelled_total 1\n"), std::string::npos);
  EXPECT_NE(t.find("geniex_time_to_first_token_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(t.find("# TYPE geniex_requests_total counter\n"), std::string::npos);
}

TEST(Metrics, TokensPerSecondOverTheWindow) {
  Metrics m;
  const auto t0 = Metrics::Clock::now();
  for (int s = 0; s < 5; ++s) m.add_generated_tokens(20, t0 + std::chrono::seconds(s));
  // 100 tokens in whole seconds inside the last 10 s.
  EXPECT_DOUBLE_EQ(m.tokens_per_second(t0 + std::chrono::seconds(6)), 10.0);
  // Long after: nothing in the window.
  EXPECT_DOUBLE_EQ(m.tokens_per_second(t0 + std::chrono::seconds(60)), 0.0);
}

TEST(Metrics, RouteLabelsAreBounded) {
  EXPECT_EQ(route_label("/v1/chat/completions"), "/v1/chat/completions");
  EXPECT_EQ(route_label("/v1/models/gemma"), "/v1/models/{id}");
  EXPECT_EQ(route_label("/random/path/123"), "other");
}

}  // namespace
}  // namespace geniex::server
