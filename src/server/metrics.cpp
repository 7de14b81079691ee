#include "server/metrics.h"

#include <cstdio>

namespace geniex::server {
namespace {

int64_t second_of(Metrics::Clock::time_point t, Metrics::Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::seconds>(t - t0).count();
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const char* name, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), " %.6g\n", v);
  out += name;
  out += buf;
}

// One metric with a single sample: its HELP/TYPE header, then `name value`.
void metric(std::string& out, const char* name, const char* type, const char* help, double v) {
  header(out, name, type, help);
  sample(out, name, v);
}

}  // namespace

Metrics::Metrics() : t0_(Clock::now()) {}

void Metrics::on_request(std::string_view route, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{std::string(route), status}];
}

void Metrics::add_prompt_tokens(int64_t n) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += n;
}

void Metrics::add_generated_tokens(int64_t n, Clock::time_point now) {
  const int64_t s = second_of(now, t0_);
  std::lock_guard lock(mu_);
  generated_tokens_ += n;
  auto& b = buckets_[static_cast<size_t>(s) % buckets_.size()];
  if (b.first != s) b = {s, 0};
  b.second += n;
}

void Metrics::observe_ttft(double seconds) {
  std::lock_guard lock(mu_);
  ttft_sum_ += seconds;
  ++ttft_count_;
}

void Metrics::on_cancelled() {
  std::lock_guard lock(mu_);
  ++cancelled_;
}

double Metrics::tokens_per_second(Clock::time_point now) const {
  const int64_t s = second_of(now, t0_);
  std::lock_guard lock(mu_);
  int64_t sum = 0;
  // The last kWindowSeconds whole seconds (the current one is still filling).
  for (const auto& [sec, n] : buckets_) {
    if (sec < s && sec >= s - kWindowSeconds) sum += n;
  }
  return static_cast<double>(sum) / kWindowSeconds;
}

std::string Metrics::render(const MetricGauges& g) const {
  const double tps = tokens_per_second();
  std::lock_guard lock(mu_);
  std::string out;
  header(out, "geniex_requests_total", "counter", "HTTP requests by route and status.");
  for (const auto& [key, n] : requests_) {
    out += "geniex_requests_total{route=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  metric(out, "geniex_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
         static_cast<double>(prompt_tokens_));
  metric(out, "geniex_generated_tokens_total", "counter", "Tokens generated.",
         static_cast<double>(generated_tokens_));
  metric(out, "geniex_requests_cancelled_total", "counter",
         "Generations cancelled (client disconnected or shutdown).",
         static_cast<double>(cancelled_));
  metric(out, "geniex_requests_in_flight", "gauge", "Requests holding a generation slot.",
         static_cast<double>(g.in_flight));
  metric(out, "geniex_requests_queued", "gauge", "Requests waiting for a slot.",
         static_cast<double>(g.queued));
  metric(out, "geniex_parallel_slots", "gauge", "Generation slots (--parallel).",
         static_cast<double>(g.parallel));
  metric(out, "geniex_queue_capacity", "gauge", "Queue length beyond which requests get 429.",
         static_cast<double>(g.queue_capacity));
  metric(out, "geniex_context_size", "gauge", "Context window of the model, in tokens.",
         static_cast<double>(g.context_size));
  metric(out, "geniex_engine_steps_total", "counter",
         "Batched forward passes (one per decode step, shared by every active sequence).",
         static_cast<double>(g.engine_steps));
  metric(out, "geniex_engine_tokens_total", "counter", "Tokens evaluated by those passes.",
         static_cast<double>(g.engine_batched_tokens));
  metric(out, "geniex_engine_active_sequences", "gauge", "Sequences generating now.",
         static_cast<double>(g.engine_active));
  metric(out, "geniex_kv_resident_bytes", "gauge", "KV cache bytes in memory.",
         static_cast<double>(g.kv_bytes_resident));
  metric(out, "geniex_kv_spilled_bytes", "gauge", "KV cache bytes only in the spill file.",
         static_cast<double>(g.kv_bytes_spilled));
  metric(out, "geniex_kv_blocks_in_use", "gauge", "KV blocks held by sequences.",
         static_cast<double>(g.kv_blocks_in_use));
  metric(out, "geniex_kv_blocks_cached", "gauge", "KV blocks kept only for prefix reuse.",
         static_cast<double>(g.kv_blocks_cached));
  metric(out, "geniex_generation_tokens_per_second", "gauge",
         "Generated tokens per second over the last 10 s (all requests together).", tps);
  header(out, "geniex_time_to_first_token_seconds", "summary",
         "Request arrival to the first generated token.");
  sample(out, "geniex_time_to_first_token_seconds_sum", ttft_sum_);
  sample(out, "geniex_time_to_first_token_seconds_count", static_cast<double>(ttft_count_));
  return out;
}

std::string route_label(std::string_view path) {
  static constexpr std::string_view kRoutes[] = {"/",
                                                 "/health",
                                                 "/metrics",
                                                 "/props",
                                                 "/v1/models",
                                                 "/v1/chat/completions",
                                                 "/v1/completions",
                                                 "/v1/embeddings"};
  for (const auto r : kRoutes) {
    if (path == r) return std::string(r);
  }
  if (path.starts_with("/v1/models/")) return "/v1/models/{id}";
  return "other";
}

}  // namespace geniex::server
