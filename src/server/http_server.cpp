#include "server/http_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "server/access_log.h"
#include "server/completion_handler.h"
#include "server/embeddings_handler.h"
#include "server/response.h"
#include "server/router.h"
#include "server/routes_info.h"

namespace geniex::server {
namespace {

/// Compares without an early exit, so response time does not tell how much of a key matched.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Threads that accept, read and write (never blocked by a handler), and workers for the cheap
// GET routes.
constexpr int kIoThreads = 2;
constexpr size_t kCheapWorkers = 2;

/// SO_REUSEADDR only, never SO_REUSEPORT, which lets a second process bind a port that is
/// already listening and then shares its connections (issue 28).
void reuse_addr_only(int sock) {
  const int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

std::string where(const std::string& host, int port) {
  return port == 0 ? "any port on " + host : "port " + std::to_string(port) + " on " + host;
}

bool needs_key(const std::string& path) {
  return path.starts_with("/v1/") || path == "/v1" || path == "/metrics" || path == "/props" ||
         path == "/apply-template";
}

}  // namespace

Status probe_bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return io_error("cannot listen on " + host + ": the host is not an address (" +
                    gai_strerror(rc) + ")");
  }
  int err = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int sock = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (sock < 0) {
      err = errno;
      continue;
    }
    reuse_addr_only(sock);
    const bool ok = ::bind(sock, a->ai_addr, a->ai_addrlen) == 0 && ::listen(sock, 1) == 0;
    if (!ok) err = errno;
    ::close(sock);
    if (ok) {
      freeaddrinfo(found);
      return Status::ok_status();
    }
  }
  freeaddrinfo(found);
  switch (err) {
    case EADDRINUSE:
      return io_error(where(host, port) +
                      " is already in use (another server listens there): stop it, or choose "
                      "another --port (0 = any free port)");
    case EACCES:
      return io_error("permission denied for " + where(host, port) +
                      " (ports below 1024 need privileges)");
    case EADDRNOTAVAIL:
      return io_error("cannot listen on " + host + ": not an address of this machine");
    default:
      return io_error("cannot listen on " + where(host, port) + ": " +
                      (err != 0 ? std::strerror(err) : "no usable address"));
  }
}

/// What the transport calls: the API-key check, the route table, the access log and metrics.
class HttpServer::Service final : public HttpService {
 public:
  explicit Service(ServerState& st) : st_(st) {
    router_.add("POST", "/v1/chat/completions", [&st](HttpRequest& req, std::string_view) {
      return handle_completion(st, req, Endpoint::kChat);
    });
    router_.add("POST", "/v1/completions", [&st](HttpRequest& req, std::string_view) {
      return handle_completion(st, req, Endpoint::kCompletion);
    });
    router_.add("POST", "/apply-template", [&st](HttpRequest& req, std::string_view) {
      return handle_apply_template(st, req);
    });
    router_.add("POST", "/v1/embeddings",
                [&st](HttpRequest& req, std::string_view) { return handle_embeddings(st, req); });
    add_info_routes(router_, st);
  }

  std::optional<HttpResponse> screen(const HttpRequest& head) override {
    if (st_.options.api_key.empty() || !needs_key(head.path)) return std::nullopt;
    const std::string_view auth = head.header("Authorization");
    const std::string_view prefix = "Bearer ";
    if (auth.size() > prefix.size() && auth.starts_with(prefix) &&
        same_secret(auth.substr(prefix.size()), st_.options.api_key)) {
      return std::nullopt;
    }
    return error_response(unauthorized());
  }

  [[nodiscard]] bool is_cheap(const HttpRequest& head) const override {
    return head.method != "POST";
  }

  HttpResponse handle(HttpRequest& req) override {
    RequestNote& note = this_request();
    note = RequestNote{};
    note.start = std::chrono::steady_clock::now();
    note.routed = true;
    try {
      return router_.dispatch(req);
    } catch (const std::exception& e) {
      return error_response(internal_error(std::string("internal error: ") + e.what()));
    } catch (...) {
      return error_response(internal_error("internal error: unknown exception"));
    }
  }

  void finished(const HttpRequest& req, int status, double ms) override {
    st_.metrics.on_request(route_label(req.path), status);
    RequestNote& note = this_request();
    if (st_.options.access_log) {
      const AccessRecord r{
          req.method, req.path,          status, note.prompt_tokens, note.completion_tokens,
          ms,         note.client_closed};
      const std::string line = access_log_line(r) + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    note = RequestNote{};
  }

 private:
  static HttpResponse error_response(const ApiError& e) {
    return json_response(e.status, e.body());
  }

  ServerState& st_;
  Router router_;
};

namespace {

TransportLimits limits_of(const ServerOptions& o) {
  TransportLimits l;
  l.max_header_bytes = o.max_header_bytes;
  l.max_body_bytes = o.max_body_bytes;
  l.header_timeout = o.header_timeout;
  l.body_timeout = o.body_timeout;
  l.keep_alive = o.keep_alive;
  l.max_conns_per_client = o.max_conns_per_client;
  l.max_conns = o.max_conns;
  return l;
}

}  // namespace

HttpServer::HttpServer(Model& model, ServerOptions options)
    : HttpServer(model, std::move(options), nullptr) {}

HttpServer::HttpServer(Model& model, ServerOptions options, ModelRegistry* models)
    : state_(std::make_unique<ServerState>(model, std::move(options), models)),
      service_(std::make_unique<Service>(*state_)) {
  const ServerOptions& o = state_->options;
  // A worker for every admitted and queued request plus a few for quick answers (parse errors,
  // 429); the cheap GET routes have their own pool, so /health and /metrics answer while
  // every generation worker is busy.
  const size_t workers = static_cast<size_t>(o.parallel + o.queue + 4);
  transport_ =
      std::make_unique<HttpTransport>(*service_, limits_of(o), workers, kCheapWorkers, kIoThreads);
}

HttpServer::~HttpServer() = default;

std::string HttpServer::url() const {
  return "http://" + state_->options.host + ":" + std::to_string(port_);
}

Status HttpServer::bind() {
  const ServerOptions& o = state_->options;
  if (Status s = transport_->listen(o.host, o.port); !s.ok()) {
    // The transport says only that binding failed; probing again tells why.
    const Status why = probe_bind(o.host, o.port);
    return why.ok() ? io_error("cannot listen on " + where(o.host, o.port) + ": " + s.message())
                    : why;
  }
  port_ = transport_->port();
  return Status::ok_status();
}

Status HttpServer::run() {
  if (port_ <= 0) return geniex::internal_error("HttpServer::run before a successful bind()");
  transport_->run();
  return Status::ok_status();
}

void HttpServer::shutdown() {
  ServerState& st = *state_;
  if (st.draining.exchange(true)) return;
  st.admission.close();
  transport_->stop();
  const auto deadline = std::chrono::steady_clock::now() + st.options.shutdown_grace;
  while (st.admission.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  st.cancel_all.store(true);
}

}  // namespace geniex::server
