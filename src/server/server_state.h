// What every route handler shares: the model, the options, admission control,
// metrics and the shutdown flags. Owned by HttpServer; handlers borrow it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "geniex/geniex.hpp"
#include "server/admission.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/token_texts.h"

namespace geniex::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 18181;                     ///< 0 = any free port (HttpServer::port() tells which)
  std::string api_key;                  ///< empty = no authentication
  int parallel = 4;                     ///< requests generating at once
  int queue = 32;                       ///< requests waiting for a slot before 429
  size_t max_body_bytes = 4u << 20;     ///< decoded request body, chunked or not (413 beyond)
  size_t max_header_bytes = 16u << 10;  ///< request line and header lines together (431 beyond)
  int max_conns_per_client = 64;        ///< open connections from one address (503 beyond)
  int max_conns = 256;                  ///< open connections in all (503 beyond)
  std::chrono::milliseconds header_timeout{10000};  ///< to send a request's header
  std::chrono::milliseconds body_timeout{30000};    ///< to send its body (408 beyond)
  std::chrono::milliseconds keep_alive{5000};       ///< an idle connection closes after this
  std::string model_id;                             ///< the name clients send as "model"
  int64_t created = 0;                              ///< unix seconds, reported by /v1/models
  std::chrono::milliseconds shutdown_grace{5000};   ///< in-flight work may finish this long
  /// What a request gets for the fields it omits (geniex serve's sampling flags; see
  /// request_defaults for max_tokens -1).
  GenerationConfig defaults = request_defaults();
  bool access_log = true;  ///< one line per request on stderr (see access_log.h)
  /// Where chat requests' images may come from (file:// directories, count limit).
  ImageOptions images;
};

class ModelRegistry;

struct ServerState {
  ServerState(Model& m, ServerOptions o, ModelRegistry* models = nullptr)
      : model(m),
        options(std::move(o)),
        admission(options.parallel, options.queue),
        texts(m),
        registry(models) {}

  Model& model;  ///< the default model (with a registry: the one loaded at start)
  const ServerOptions options;
  Admission admission;
  Metrics metrics;
  TokenTexts texts;
  /// Several models served (route by the request's "model"); null: `model` is the only one.
  ModelRegistry* registry = nullptr;
  std::atomic<bool> draining{false};    ///< shutdown began: new requests get 503
  std::atomic<bool> cancel_all{false};  ///< grace period over: in-flight generations stop

  [[nodiscard]] MetricGauges gauges() const {
    MetricGauges g{admission.in_flight(), admission.queued(), admission.parallel(),
                   admission.queue_capacity(), model.info().n_ctx};
    const EngineStats e = model.engine_stats();
    const KvStats kv = model.kv_stats();
    g.engine_steps = e.steps;
    g.engine_batched_tokens = e.batched_tokens;
    g.engine_active = e.active;
    g.kv_bytes_resident = kv.bytes_resident;
    g.kv_bytes_spilled = kv.bytes_spilled;
    g.kv_blocks_in_use = kv.blocks_in_use;
    g.kv_blocks_cached = kv.blocks_cached;
    return g;
  }
};

}  // namespace geniex::server
