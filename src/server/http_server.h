// HttpServer: the OpenAI-compatible HTTP front end over one geniex::Model. It wires the route
// table, the API-key check (before the body is read), OpenAI-shaped error bodies, per-request
// metrics and the access log, and graceful shutdown onto the transport (http_transport.h:
// Boost.Beast, its limits and worker pools); the routes themselves are in
// completion_handler.cpp and routes_info.cpp.
#pragma once

#include <memory>
#include <string>

#include "geniex/geniex.hpp"
#include "server/http_transport.h"
#include "server/server_state.h"

namespace geniex::server {

/// Tries to bind and listen on host:port as HttpServer::bind would, then closes the socket.
/// OK when the address is free; else kIoError with the reason ("port 8080 on 127.0.0.1 is
/// already in use ...", an unknown host, a privileged port). `geniex serve` calls it before
/// loading the model so a taken port fails fast; bind() uses it to explain a failure.
Status probe_bind(const std::string& host, int port);

class HttpServer {
 public:
  /// `model` must outlive the server.
  HttpServer(Model& model, ServerOptions options);
  /// Several models: `model` is the default one (options.model_id names it in `models`);
  /// requests pick theirs by name. `models` must outlive the server.
  HttpServer(Model& model, ServerOptions options, ModelRegistry* models);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds host:port (port 0 = any free port) with SO_REUSEADDR only (never SO_REUSEPORT, so a
  /// second server on a taken port fails here instead of sharing it). kIoError when the address
  /// is taken or invalid; the message says which (see probe_bind).
  [[nodiscard]] Status bind();
  /// The bound port.
  [[nodiscard]] int port() const { return port_; }
  /// "http://host:port".
  [[nodiscard]] std::string url() const;

  /// Serves until shutdown() has finished; returns once every connection and worker has ended.
  Status run();

  /// Thread-safe; returns quickly. Stops accepting and closes idle connections (requests
  /// already read and queued ones get 503),
  /// lets in-flight generations finish for options.shutdown_grace, then cancels them.
  /// Blocks until that is decided (at most the grace period).
  void shutdown();

  [[nodiscard]] ServerState& state() { return *state_; }

 private:
  class Service;  ///< routes, API key, access log and metrics: what the transport calls

  std::unique_ptr<ServerState> state_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpTransport> transport_;
  int port_ = 0;
};

}  // namespace geniex::server
