#include "server/http_server.h"

#include <httplib.h>
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
#include "server/response.h"
#include "server/routes_info.h"

namespace geniex::server {
namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.body(), "application/json");
}

/// Compares without an early exit, so response time does not tell how much of a key matched.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Idle keep-alive connections are closed after this long (see install_routes).
constexpr time_t kKeepAliveSeconds = 2;

/// SO_REUSEADDR only. httplib's default also sets SO_REUSEPORT, which lets a second process
/// bind a port that is already listening and then shares its connections (issue 28).
void reuse_addr_only(int sock) {
  const int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

std::string where(const std::string& host, int port) {
  return port == 0 ? "any port on " + host : "port " + std::to_string(port) + " on " + host;
}

bool needs_key(const std::string& path) {
  return path.starts_with("/v1/") || path == "/v1" || path == "/metrics" || path == "/props";
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

HttpServer::HttpServer(Model& model, ServerOptions options)
    : state_(std::make_unique<ServerState>(model, std::move(options))),
      http_(std::make_unique<httplib::Server>()) {
  install_routes();
}

HttpServer::~HttpServer() = default;

std::string HttpServer::url() const {
  return "http://" + state_->options.host + ":" + std::to_string(port_);
}

void HttpServer::install_routes() {
  ServerState& st = *state_;
  const ServerOptions& o = st.options;
  // Enough workers for every admitted and queued request plus headroom, so /health, /metrics
  // and immediate 429s are answered while generations run.
  const size_t workers = static_cast<size_t>(o.parallel + o.queue + 8);
  http_->new_task_queue = [workers] {
    return new httplib::ThreadPool(workers);  // NOLINT: httplib takes ownership
  };
  http_->set_payload_max_length(o.max_body_bytes);
  http_->set_socket_options(reuse_addr_only);
  // An idle keep-alive connection holds its worker until the client sends or this timeout
  // passes, and httplib's stop() does not interrupt that wait, so it bounds how long shutdown can
  // outlast the grace period (5 s here made SIGTERM take grace + ~5 s with any idle client).
  http_->set_keep_alive_timeout(kKeepAliveSeconds);

  http_->set_pre_routing_handler([&st](const httplib::Request& req, httplib::Response& res) {
    RequestNote& note = this_request();
    note = RequestNote{};
    note.start = std::chrono::steady_clock::now();
    note.routed = true;
    if (st.options.api_key.empty() || !needs_key(req.path)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const std::string auth = req.get_header_value("Authorization");
    const std::string_view prefix = "Bearer ";
    if (auth.size() > prefix.size() && auth.starts_with(prefix) &&
        same_secret(std::string_view(auth).substr(prefix.size()), st.options.api_key)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    send_error(res, unauthorized());
    return httplib::Server::HandlerResponse::Handled;
  });

  http_->Post("/v1/chat/completions", [&st](const httplib::Request& req, httplib::Response& res) {
    handle_completion(st, req, res, Endpoint::kChat);
  });
  http_->Post("/v1/completions", [&st](const httplib::Request& req, httplib::Response& res) {
    handle_completion(st, req, res, Endpoint::kCompletion);
  });
  add_info_routes(*http_, st);

  // Every 4xx/5xx without a body of ours (unknown route, body over the limit, a request line
  // httplib rejected) gets an OpenAI-shaped one.
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [&st](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        switch (res.status) {
          case 404: e = route_not_found(req.method, req.path); break;
          case 413: e = body_too_large(st.options.max_body_bytes); break;
          default:
            e = {res.status,
                 "The request could not be processed (HTTP " + std::to_string(res.status) + ").",
                 res.status < 500 ? "invalid_request_error" : "server_error", std::nullopt,
                 std::nullopt};
        }
        e.status = res.status;
        res.set_content(e.body(), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& ex) {
          what = ex.what();
        } catch (...) {
        }
        send_error(res, internal_error("internal error: " + what));
      });
  // Runs on the worker thread that served the request, after its last byte was written.
  http_->set_logger([&st](const httplib::Request& req, const httplib::Response& res) {
    st.metrics.on_request(route_label(req.path), res.status);
    RequestNote& note = this_request();
    if (st.options.access_log) {
      AccessRecord r{
          req.method, req.path,          res.status, note.prompt_tokens, note.completion_tokens,
          -1,         note.client_closed};
      if (note.routed) {
        r.ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - note.start)
                .count();
      }
      const std::string line = access_log_line(r) + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    note = RequestNote{};
  });
}

Status HttpServer::bind() {
  const ServerOptions& o = state_->options;
  // httplib says only whether binding worked; probing again tells why it did not.
  if (o.port == 0) {
    port_ = http_->bind_to_any_port(o.host);
    if (port_ <= 0) {
      port_ = 0;
      const Status why = probe_bind(o.host, 0);
      return why.ok() ? io_error("cannot listen on " + where(o.host, 0)) : why;
    }
    return Status::ok_status();
  }
  if (!http_->bind_to_port(o.host, o.port)) {
    const Status why = probe_bind(o.host, o.port);
    return why.ok() ? io_error("cannot listen on " + where(o.host, o.port)) : why;
  }
  port_ = o.port;
  return Status::ok_status();
}

Status HttpServer::run() {
  if (port_ <= 0) return geniex::internal_error("HttpServer::run before a successful bind()");
  http_->listen_after_bind();
  return Status::ok_status();
}

void HttpServer::shutdown() {
  ServerState& st = *state_;
  if (st.draining.exchange(true)) return;
  st.admission.close();
  http_->stop();
  const auto deadline = std::chrono::steady_clock::now() + st.options.shutdown_grace;
  while (st.admission.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  st.cancel_all.store(true);
}

}  // namespace geniex::server
