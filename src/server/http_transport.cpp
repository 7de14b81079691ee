// Boost.Beast lives in this file only (it is heavy to compile). One Session per connection; all
// its socket operations run on its strand, on the I/O threads. A complete request goes to a
// worker pool; the worker writes the response by posting writes to the strand and waiting for
// them, so the socket is never used by two threads at once.
#define BOOST_BEAST_USE_STD_STRING_VIEW 1

#include "server/http_transport.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/api_error.h"
#include "server/connection_limits.h"
#include "server/router.h"
#include "server/worker_pool.h"

namespace geniex::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = beast::error_code;
using Clock = std::chrono::steady_clock;

// After an error response the connection closes; reading (and dropping) what the client still
// sends for a moment lets it see the response instead of a reset. Bounded in time and bytes.
constexpr std::chrono::milliseconds kLingerTime{1000};
constexpr size_t kLingerBytes = 1u << 20;

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

/// The first coding of a Transfer-Encoding list that is not "chunked" ("" when all are).
std::string non_chunked_coding(std::string_view te) {
  while (!te.empty()) {
    const size_t comma = te.find(',');
    const std::string tok = trim(te.substr(0, comma));
    if (!tok.empty() && !iequals(tok, "chunked")) return tok;
    if (comma == std::string_view::npos) break;
    te.remove_prefix(comma + 1);
  }
  return {};
}

// head_of's `length` for a body sent in chunks, and for one that ends when the connection closes
// (a stream to an HTTP/1.0 client, which knows no chunks).
constexpr long long kChunked = -1;
constexpr long long kUntilClose = -2;

/// Status line and headers of `res` with a body of `length` bytes (or kChunked, kUntilClose).
std::string head_of(const HttpResponse& res, bool keep_alive, long long length) {
  const std::string_view reason = http::obsolete_reason(http::int_to_status(res.status));
  std::string h = "HTTP/1.1 " + std::to_string(res.status) + " " + std::string(reason) + "\r\n";
  h += "Content-Type: " + res.content_type + "\r\n";
  for (const auto& [k, v] : res.headers) h += k + ": " + v + "\r\n";
  if (length == kChunked) {
    h += "Transfer-Encoding: chunked\r\n";
  } else if (length >= 0) {
    h += "Content-Length: " + std::to_string(length) + "\r\n";
  }
  if (!keep_alive) h += "Connection: close\r\n";
  h += "\r\n";
  return h;
}

HttpResponse error_response(const ApiError& e) { return json_response(e.status, e.body()); }

HttpRequest unparsed_request(const std::string& peer) {
  HttpRequest r;
  r.method = "-";
  r.path = "-";
  r.peer = peer;
  return r;
}

}  // namespace

class Session;

struct HttpTransport::Impl {
  Impl(HttpService& s, TransportLimits l, size_t n_workers, size_t n_cheap, int n_io)
      : service(s),
        limits(l),
        io_threads(n_io < 1 ? 1 : n_io),
        conns(l.max_conns_per_client, l.max_conns),
        workers(std::in_place, n_workers),
        cheap(std::in_place, n_cheap) {}

  void accept();
  void on_accept(error_code ec, tcp::socket sock);
  void forget(Session* s) {
    std::lock_guard lock(sessions_mu);
    sessions.erase(s);
  }

  HttpService& service;
  const TransportLimits limits;
  const int io_threads;
  std::atomic<bool> stopping{false};
  ConnectionLimits conns;
  net::io_context ioc;
  net::strand<net::io_context::executor_type> accept_strand{net::make_strand(ioc)};
  tcp::acceptor acceptor{accept_strand};
  net::steady_timer accept_retry{accept_strand};
  int port = 0;
  std::mutex sessions_mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
  // Declared after ioc: destroyed (joined) first, since their tasks post to it.
  std::optional<WorkerPool> workers;
  std::optional<WorkerPool> cheap;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpTransport::Impl& t, tcp::socket sock, ConnectionLimits::Ticket ticket,
          std::string peer)
      : t_(t), stream_(std::move(sock)), ticket_(std::move(ticket)), peer_(std::move(peer)) {}
  ~Session() { t_.forget(this); }

  /// On the strand: reads the first request.
  void start() { read_header(); }

  /// On the strand: answers `e` (no request is read) and closes.
  void refuse_connection(const ApiError& e) {
    head_ = unparsed_request(peer_);
    refuse(error_response(e), -1);
  }

  /// On the strand (stop()): closes the connection unless a worker is answering on it.
  void close_if_waiting() {
    if (!in_worker_) close();
  }

  [[nodiscard]] auto executor() { return stream_.get_executor(); }

 private:
  class ChunkWriter final : public StreamWriter {
   public:
    ChunkWriter(Session& s, bool chunked) : s_(s), chunked_(chunked) {}
    bool write(std::string_view data) override {
      if (!ok) return false;
      if (data.empty()) return true;  // an empty chunk would end the body
      if (!chunked_) {
        ok = s_.write_blocking(std::string(data));
        return ok;
      }
      char size[20];
      const int n = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
      std::string chunk(size, static_cast<size_t>(n));
      chunk.append(data);
      chunk += "\r\n";
      ok = s_.write_blocking(std::move(chunk));
      return ok;
    }
    bool ok = true;

   private:
    Session& s_;
    const bool chunked_;
  };

  void read_header() {
    if (t_.stopping.load()) return close();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(t_.limits.max_header_bytes));
    parser_->body_limit(t_.limits.max_body_bytes);
    if (!first_ && buffer_.size() == 0) {
      // Idle keep-alive: wait for the next request's first bytes, then give it the header
      // deadline.
      stream_.expires_after(t_.limits.keep_alive);
      stream_.async_read_some(buffer_.prepare(1024),
                              [self = shared_from_this()](error_code ec, size_t n) {
                                if (ec) return self->close();
                                self->buffer_.commit(n);
                                self->read_rest_of_header();
                              });
      return;
    }
    read_rest_of_header();
  }

  void read_rest_of_header() {
    first_ = false;
    stream_.expires_after(t_.limits.header_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
  }

  /// head_ from the parsed header.
  void take_header() {
    const auto& h = parser_->get();
    head_ = HttpRequest{};
    head_.method = std::string(h.method_string());
    const std::string_view target = h.target();
    const size_t q = target.find('?');
    head_.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) head_.query = std::string(target.substr(q + 1));
    for (const auto& f : h) head_.headers.emplace_back(f.name_string(), f.value());
    head_.peer = peer_;
    start_ = Clock::now();
  }

  void on_header(error_code ec) {
    if (ec) return on_read_error(ec, true);
    take_header();

    if (auto r = t_.service.screen(head_)) return refuse(std::move(*r), ms_since_start());
    const std::string ce = trim(head_.header("Content-Encoding"));
    if (!ce.empty() && !iequals(ce, "identity"))
      return refuse(error_response(unsupported_encoding(ce)), -1);
    if (const std::string te = non_chunked_coding(head_.header("Transfer-Encoding")); !te.empty()) {
      return refuse(error_response(unsupported_encoding(te)), -1);
    }
    if (parser_->is_done()) return dispatch();
    if (iequals(trim(head_.header("Expect")), "100-continue")) {
      out_ = "HTTP/1.1 100 Continue\r\n\r\n";
      stream_.expires_after(t_.limits.write_timeout);
      net::async_write(stream_, net::buffer(out_),
                       [self = shared_from_this()](error_code wec, size_t) {
                         if (wec) return self->close();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    stream_.expires_after(t_.limits.body_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) {
                       if (ec) return self->on_read_error(ec, false);
                       self->dispatch();
                     });
  }

  void on_read_error(error_code ec, bool in_header) {
    if (in_header && ec == http::error::body_limit) {
      take_header();  // a Content-Length over the limit: the header itself was complete
    } else if (in_header) {
      head_ = unparsed_request(peer_);
    }
    if (ec == http::error::header_limit) {
      return refuse(error_response(header_too_large(t_.limits.max_header_bytes)), -1);
    }
    if (ec == http::error::body_limit) {
      return refuse(error_response(body_too_large(t_.limits.max_body_bytes)), -1);
    }
    if (ec == beast::error::timeout) {
      // tcp_stream has closed the socket already: no 408 can be sent.
      return close();
    }
    // The client went away (or the socket failed): nobody to answer. Anything else from the
    // HTTP parser is malformed framing (e.g. two different Content-Length values): 400.
    const bool parse_error =
        &ec.category() == &http::make_error_code(http::error::bad_target).category();
    if (!parse_error || ec == http::error::end_of_stream || ec == http::error::partial_message) {
      return close();
    }
    refuse(error_response(bad_http(ec.message())), -1);
  }

  void dispatch() {
    auto req = std::make_shared<HttpRequest>(std::move(head_));
    req->body = std::move(parser_->get().body());
    keep_alive_ = parser_->get().keep_alive();
    http10_ = parser_->get().version() < 11;
    parser_.reset();
    stream_.expires_never();
    const int fd = stream_.socket().native_handle();
    // The client closed its end (or the connection failed): a whole response would go nowhere.
    req->peer_gone = [fd] {
      char c = 0;
      const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
      return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    };
    in_worker_ = true;
    auto guard = std::make_shared<net::executor_work_guard<net::io_context::executor_type>>(
        t_.ioc.get_executor());
    WorkerPool& pool = t_.service.is_cheap(*req) ? *t_.cheap : *t_.workers;
    pool.post([self = shared_from_this(), req, guard] { self->serve(*req); });
  }

  /// On a worker thread.
  void serve(HttpRequest& req) {
    HttpResponse res = t_.service.handle(req);
    const bool streamed = res.stream && req.method != "HEAD";
    // A stream to an HTTP/1.0 client ends when the connection closes.
    const bool keep = keep_alive_ && !t_.stopping.load() && !(streamed && http10_);
    const bool head_only = req.method == "HEAD";
    bool ok = false;
    if (streamed) {
      ok = write_blocking(head_of(res, keep, http10_ ? kUntilClose : kChunked));
      if (ok) {
        ChunkWriter w(*this, !http10_);
        res.stream(w);
        ok = w.ok && (http10_ || write_blocking("0\r\n\r\n"));
      }
    } else {
      std::string out = head_of(res, keep, static_cast<long long>(res.body.size()));
      if (!head_only) out += res.body;
      ok = write_blocking(std::move(out));
    }
    t_.service.finished(req, res.status, ms_since_start());
    net::post(stream_.get_executor(), [self = shared_from_this(), next = keep && ok] {
      self->in_worker_ = false;
      if (next) return self->read_header();
      self->close_gracefully();
    });
  }

  /// On a worker thread: writes `data` on the strand and waits for it.
  bool write_blocking(std::string data) {
    std::promise<bool> done;
    std::future<bool> result = done.get_future();
    net::post(stream_.get_executor(), [this, &data, &done] {
      stream_.expires_after(t_.limits.write_timeout);
      net::async_write(stream_, net::buffer(data), [this, &done](error_code ec, size_t) {
        stream_.expires_never();
        done.set_value(!ec);
      });
    });
    return result.get();
  }

  /// On the strand: sends `res`, then closes (the rest of the request is not read).
  void refuse(HttpResponse res, double ms) {
    out_ = head_of(res, false, static_cast<long long>(res.body.size())) + res.body;
    stream_.expires_after(t_.limits.write_timeout);
    net::async_write(stream_, net::buffer(out_),
                     [self = shared_from_this(), status = res.status, ms](error_code ec, size_t) {
                       self->t_.service.finished(self->head_, status, ms);
                       if (ec) return self->close();
                       self->close_gracefully();
                     });
  }

  void close_gracefully() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    stream_.expires_after(kLingerTime);
    linger();
  }

  void linger() {
    stream_.async_read_some(net::buffer(discard_),
                            [self = shared_from_this()](error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec || self->lingered_ > kLingerBytes) return self->close();
                              self->linger();
                            });
  }

  void close() {
    if (!stream_.socket().is_open()) return;
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  double ms_since_start() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
  }

  HttpTransport::Impl& t_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  ConnectionLimits::Ticket ticket_;
  std::string peer_;
  HttpRequest head_;
  Clock::time_point start_ = Clock::now();
  std::string out_;
  std::array<char, 4096> discard_{};
  size_t lingered_ = 0;
  bool first_ = true;
  bool keep_alive_ = false;
  bool http10_ = false;
  bool in_worker_ = false;
};

void HttpTransport::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket sock) {
    on_accept(ec, std::move(sock));
  });
}

void HttpTransport::Impl::on_accept(error_code ec, tcp::socket sock) {
  if (ec) {
    if (stopping.load() || !acceptor.is_open()) return;
    // Out of file descriptors or similar: try again shortly instead of spinning.
    accept_retry.expires_after(std::chrono::milliseconds(50));
    accept_retry.async_wait([this](error_code e) {
      if (!e && !stopping.load()) accept();
    });
    return;
  }
  if (stopping.load()) {
    sock.close(ec);
    return;
  }
  error_code pe;
  const tcp::endpoint ep = sock.remote_endpoint(pe);
  const std::string peer = pe ? std::string("unknown") : ep.address().to_string();
  ConnectionLimits::Ticket ticket;
  const ConnectionLimits::Outcome outcome = conns.open(peer, ticket);
  auto s = std::make_shared<Session>(*this, std::move(sock), std::move(ticket), peer);
  {
    std::lock_guard lock(sessions_mu);
    sessions.emplace(s.get(), s);
  }
  net::dispatch(s->executor(), [this, s, outcome] {
    switch (outcome) {
      case ConnectionLimits::Outcome::kAccepted: return s->start();
      case ConnectionLimits::Outcome::kClientFull:
        return s->refuse_connection(too_many_connections("from this client", conns.per_client()));
      case ConnectionLimits::Outcome::kTotalFull:
        return s->refuse_connection(too_many_connections("on this server", conns.total()));
    }
  });
  accept();
}

HttpTransport::HttpTransport(HttpService& service, TransportLimits limits, size_t workers,
                             size_t cheap_workers, int io_threads)
    : impl_(std::make_unique<Impl>(service, limits, workers, cheap_workers, io_threads)) {}

HttpTransport::~HttpTransport() = default;

Status HttpTransport::listen(const std::string& host, int port) {
  Impl& t = *impl_;
  error_code ec;
  tcp::resolver resolver(t.ioc);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec) return io_error("cannot resolve " + host + ": " + ec.message());
  for (const auto& entry : found) {
    error_code e;
    tcp::acceptor& a = t.acceptor;
    a.open(entry.endpoint().protocol(), e);
    if (e) continue;
    // SO_REUSEADDR only: never SO_REUSEPORT, so a second server on a taken port fails here.
    a.set_option(net::socket_base::reuse_address(true), e);
    if (!e) a.bind(entry.endpoint(), e);
    if (!e) a.listen(net::socket_base::max_listen_connections, e);
    if (!e) {
      t.port = a.local_endpoint(e).port();
      if (!e) return Status::ok_status();
    }
    ec = e;
    error_code ignored;
    a.close(ignored);
  }
  return io_error("cannot listen on " + host + ": " + (ec ? ec.message() : "no address"));
}

int HttpTransport::port() const { return impl_->port; }

void HttpTransport::run() {
  Impl& t = *impl_;
  if (!t.stopping.load()) t.accept();
  std::vector<std::thread> extra;
  for (int i = 1; i < t.io_threads; ++i) extra.emplace_back([&t] { t.ioc.run(); });
  t.ioc.run();
  for (std::thread& th : extra) th.join();
  t.workers.reset();
  t.cheap.reset();
}

void HttpTransport::stop() {
  Impl& t = *impl_;
  if (t.stopping.exchange(true)) return;
  net::post(t.accept_strand, [&t] {
    error_code ec;
    t.acceptor.close(ec);
    t.accept_retry.cancel();
  });
  std::vector<std::shared_ptr<Session>> open;
  {
    std::lock_guard lock(t.sessions_mu);
    for (auto& [ptr, weak] : t.sessions) {
      if (auto s = weak.lock()) open.push_back(std::move(s));
    }
  }
  for (auto& s : open) net::post(s->executor(), [s] { s->close_if_waiting(); });
}

}  // namespace geniex::server
