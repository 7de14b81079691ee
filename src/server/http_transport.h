// The HTTP/1.1 transport of geniex serve (Boost.Beast over Asio; the only file that includes
// them is http_transport.cpp). I/O threads accept and read asynchronously, so an idle or slow
// connection costs a socket and a small buffer, never a thread; complete requests run on worker
// pools. The limits (header bytes, body bytes for Content-Length and chunked bodies alike, read
// deadlines, connections per client and in total) are enforced here, before any handler runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "geniex/geniex.hpp"
#include "server/http_types.h"

namespace geniex::server {

struct TransportLimits {
  size_t max_header_bytes = 16 * 1024;  ///< request line + every header line (431 beyond)
  size_t max_body_bytes = 4u << 20;     ///< decoded body, chunked or not (413 beyond)
  std::chrono::milliseconds header_timeout{10000};  ///< from the first byte to the header's end
  std::chrono::milliseconds body_timeout{30000};    ///< for the whole body after the header
  std::chrono::milliseconds keep_alive{5000};       ///< idle time before a next request
  /// For each write to a client: one that takes nothing for this long is gone (it also bounds
  /// how long shutdown can wait for a stream to a client that stopped reading).
  std::chrono::milliseconds write_timeout{10000};
  int max_conns_per_client = 64;  ///< open connections of one address
  int max_conns = 256;            ///< open connections in all
};

/// What the transport calls on the server above it.
class HttpService {
 public:
  virtual ~HttpService() = default;
  /// On an I/O thread, once the header is read: a response to send instead of reading the body
  /// (e.g. 401), or nullopt to go on. Must not block.
  virtual std::optional<HttpResponse> screen(const HttpRequest& head) = 0;
  /// Whether the request goes to the small pool of cheap routes, which never waits for a
  /// generation slot (so /health answers while every completion worker is busy).
  [[nodiscard]] virtual bool is_cheap(const HttpRequest& head) const = 0;
  /// On a worker thread: the response (a streamed one's producer runs next, on that thread).
  virtual HttpResponse handle(HttpRequest& req) = 0;
  /// After the response's last byte was written or the write failed: on the handler's thread for
  /// handled requests, else on an I/O thread. `ms` < 0 for requests refused before routing
  /// (limits, encoding, malformed framing); their method and path are "-" when the header
  /// could not be parsed.
  virtual void finished(const HttpRequest& req, int status, double ms) = 0;
};

class HttpTransport {
 public:
  /// `service` must outlive the transport. `workers` threads run handlers of requests that are
  /// not cheap, `cheap_workers` the cheap ones, `io_threads` accept, read and write.
  HttpTransport(HttpService& service, TransportLimits limits, size_t workers, size_t cheap_workers,
                int io_threads);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  /// Binds host:port (0 = any free port) with SO_REUSEADDR only and listens. kIoError on
  /// failure (the caller explains it with probe_bind).
  [[nodiscard]] Status listen(const std::string& host, int port);
  /// The bound port (0 before listen()).
  [[nodiscard]] int port() const;
  /// Serves until stop() and every connection has closed; then the workers are joined.
  void run();
  /// Thread-safe. Stops accepting and closes connections that wait for a request; a request
  /// being handled finishes (its connection closes after the response).
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace geniex::server
