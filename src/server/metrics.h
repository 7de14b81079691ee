// Server metrics in the Prometheus text format (GET /metrics): requests by route and status,
// prompt and generated tokens, in-flight and queued requests, generation speed, TTFT.
// Thread-safe; counters are cheap enough to bump once per generated token.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace geniex::server {

/// Gauges owned elsewhere (admission control, the model), read when rendering.
struct MetricGauges {
  int64_t in_flight = 0;
  int64_t queued = 0;
  int64_t parallel = 0;
  int64_t queue_capacity = 0;
  int64_t context_size = 0;
  // The engine (continuous batching) and its paged KV cache.
  int64_t engine_steps = 0;           ///< batched forward passes so far
  int64_t engine_batched_tokens = 0;  ///< tokens those passes evaluated
  int64_t engine_active = 0;          ///< sequences generating now
  int64_t kv_bytes_resident = 0;
  int64_t kv_bytes_spilled = 0;
  int64_t kv_blocks_in_use = 0;
  int64_t kv_blocks_cached = 0;
};

class Metrics {
 public:
  using Clock = std::chrono::steady_clock;

  Metrics();

  /// One finished HTTP request; `route` is a fixed label (see route_label), not the raw path.
  void on_request(std::string_view route, int status);
  void add_prompt_tokens(int64_t n);
  /// n generated tokens at time `now` (feeds the tokens-per-second window).
  void add_generated_tokens(int64_t n, Clock::time_point now = Clock::now());
  void observe_ttft(double seconds);
  /// A generation the client abandoned (disconnect) or shutdown cancelled.
  void on_cancelled();

  /// Generated tokens per second over the last kWindowSeconds whole seconds.
  [[nodiscard]] double tokens_per_second(Clock::time_point now = Clock::now()) const;
  [[nodiscard]] std::string render(const MetricGauges& gauges) const;

  static constexpr int kWindowSeconds = 10;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t prompt_tokens_ = 0;
  int64_t generated_tokens_ = 0;
  int64_t cancelled_ = 0;
  double ttft_sum_ = 0;
  int64_t ttft_count_ = 0;
  // Per-second buckets of generated tokens: (second index, tokens).
  std::array<std::pair<int64_t, int64_t>, kWindowSeconds + 2> buckets_{};
  Clock::time_point t0_;
};

/// The metrics label of a request path: the route pattern it matched ("/v1/models/{id}"),
/// or "other" (so unknown paths cannot blow up the label set).
std::string route_label(std::string_view path);

}  // namespace geniex::server
