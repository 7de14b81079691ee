#include "cmd_health.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "cmd_serve.h"
#include "number_flags.h"

namespace geniex::cli {
namespace {

struct HealthOptions {
  std::string host;   ///< empty: $GENIEX_HOST as serve reads it, else 127.0.0.1
  int32_t port = -1;  ///< -1: $GENIEX_PORT as serve reads it, else 18181
  double timeout = 5.0;
};

/// A closed-on-exit socket.
struct Socket {
  int fd = -1;
  Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

/// Waits until `fd` is ready for `events`; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

/// Connects to host:port before the deadline; the reason in `why` on failure.
bool connect_to(const std::string& host, int port, Clock::time_point deadline, Socket& s,
                std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    why = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return false;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(res, &::freeaddrinfo);
  why = "no address for '" + host + "'";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    Socket attempt;
    attempt.fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (attempt.fd < 0) {
      why = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    if (::connect(attempt.fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::string("connect: ") + std::strerror(errno);
      continue;
    }
    if (!wait_for(attempt.fd, POLLOUT, deadline)) {
      why = "connect: timed out";
      continue;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(attempt.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      why = std::string("connect: ") + std::strerror(err);
      continue;
    }
    s.fd = attempt.fd;
    attempt.fd = -1;
    return true;
  }
  return false;
}

/// GET /health; fills `response` or `why`.
bool get_health(const Socket& s, const std::string& host, Clock::time_point deadline,
                std::string& response, std::string& why) {
  // An IPv6 literal goes in brackets in the Host header.
  const std::string authority = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const std::string req =
      "GET /health HTTP/1.1\r\nHost: " + authority + "\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < req.size()) {
    if (!wait_for(s.fd, POLLOUT, deadline)) {
      why = "send: timed out";
      return false;
    }
    const ssize_t n = ::send(s.fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      why = std::string("send: ") + std::strerror(errno);
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  char buf[4096];
  constexpr size_t kMaxResponse = 64 * 1024;
  for (;;) {
    if (!wait_for(s.fd, POLLIN, deadline)) {
      why = "no answer within the timeout";
      return false;
    }
    const ssize_t n = ::recv(s.fd, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      why = std::string("recv: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) break;
    response.append(buf, static_cast<size_t>(n));
    if (response.size() > kMaxResponse) break;
  }
  if (response.empty()) {
    why = "the connection closed without an answer";
    return false;
  }
  return true;
}

/// The line printed for an answer: "healthy: <body>" or the status and body.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  constexpr size_t kMax = 200;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

int run_health(const HealthOptions& o) {
  auto endpoint = serve_endpoint_from_env();
  if (!endpoint.ok()) {
    std::fprintf(stderr, "geniex health: %s\n", endpoint.status().message().c_str());
    return kExitUsage;
  }
  std::string host = o.host.empty() ? endpoint->host : o.host;
  const int port = o.port >= 0 ? o.port : endpoint->port;
  // A server bound to every address answers on loopback.
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1] as in a URL
  }
  if (host == "::") host = "::1";
  const std::string where = host + ":" + std::to_string(port);
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::llround(o.timeout * 1000.0));
  Socket s;
  std::string why;
  std::string response;
  if (!connect_to(host, port, deadline, s, why) || !get_health(s, host, deadline, response, why)) {
    std::printf("unhealthy: %s: %s\n", where.c_str(), why.c_str());
    return kExitError;
  }
  const size_t eol = response.find("\r\n");
  const std::string status_line = response.substr(0, eol);
  const size_t body_at = response.find("\r\n\r\n");
  const std::string body = body_at == std::string::npos ? "" : response.substr(body_at + 4);
  // "HTTP/1.1 200 OK"
  const size_t sp = status_line.find(' ');
  const std::string code = sp == std::string::npos ? "" : status_line.substr(sp + 1, 3);
  if (!status_line.starts_with("HTTP/") || code.size() != 3) {
    std::printf("unhealthy: %s: not an HTTP answer: %s\n", where.c_str(),
                one_line(status_line).c_str());
    return kExitError;
  }
  if (code != "200") {
    std::printf("unhealthy: %s: /health answered %s %s\n", where.c_str(), code.c_str(),
                one_line(body).c_str());
    return kExitError;
  }
  std::printf("healthy: %s %s\n", where.c_str(), one_line(body).c_str());
  return kExitOk;
}

}  // namespace

Command register_health(CLI::App& parent) {
  auto o = std::make_shared<HealthOptions>();
  CLI::App* c = parent.add_subcommand(
      "health", "ask a running `geniex serve` for GET /health: exit 0 when it answers 200");
  c->add_option("--host", o->host,
                "server address (default: $GENIEX_HOST as serve reads it, else 127.0.0.1; "
                "0.0.0.0 means loopback)");
  add_count_option(c, "--port", o->port, 0, 65535,
                   "server port (default: $GENIEX_PORT, else 18181)")
      ->default_str("");
  add_real_option(c, "--timeout", o->timeout, 1e-3, 3600.0,
                  "seconds to wait for the answer, connecting included");
  c->footer(
      "Exit status: 0 when /health answers 200 (prints 'healthy: HOST:PORT BODY'), 1 otherwise "
      "with one line saying why (refused, timed out, 503 while shutting down, ...), 2 for a bad "
      "command line. No curl needed: for container HEALTHCHECKs.");
  return {c, [o] { return run_health(*o); }};
}

}  // namespace geniex::cli
