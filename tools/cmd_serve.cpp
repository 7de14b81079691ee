#include "cmd_serve.h"

#include <pthread.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "default_model.h"
#include "geniex/geniex.hpp"
#include "kv_flags.h"
#include "server/http_server.h"

namespace geniex::cli {
namespace {

struct ServeOptions {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 18181;
  std::string api_key;
  int parallel = 4;
  int queue = 32;
  int32_t ctx = 4096;
  int32_t threads = 0;
  KvOptions kv;
  bool deterministic = false;
  std::string device = "auto";
  double max_body_mb = 4.0;
  double shutdown_timeout = 5.0;
  bool verbose = false;
};

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex serve: %s\n", what.c_str());
  return kExitError;
}

/// Waits for SIGINT / SIGTERM (blocked in every thread, taken here with sigtimedwait) and
/// shuts the server down; exits on its own when `done` is set.
void watch_signals(server::HttpServer& srv, const std::atomic<bool>& done) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const timespec tick{0, 200 * 1000 * 1000};
  while (!done.load()) {
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      std::fprintf(stderr, "geniex serve: %s: stopping (in-flight requests get %.1f s)\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM",
                   static_cast<double>(srv.state().options.shutdown_grace.count()) / 1000.0);
      srv.shutdown();
      return;
    }
  }
}

int run_serve(const ServeOptions& o) {
  if (o.parallel < 1) return fail("--parallel must be >= 1");
  if (o.queue < 0) return fail("--queue must be >= 0");
  if (o.port < 0 || o.port > 65535) return fail("--port must be in [0, 65535]");
  if (!(o.max_body_mb > 0)) return fail("--max-body-mb must be > 0");
  std::string path = o.model;
  if (path.empty()) {
    auto p = default_model_path();
    if (!p.ok()) return fail(p.status().message());
    path = *p;
  }
  // Signals go to the watcher thread only: block them before any thread starts (the model's
  // thread pool included), so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server

  auto device = Device::parse(o.device);
  if (!device.ok()) return fail(device.status().message());
  // A taken port fails now, not after the model has loaded (bind() checks again below).
  if (Status free = server::probe_bind(o.host, o.port); !free.ok()) return fail(free.message());
  ModelBuilder b(path);
  // One sequence per generating request; the batching engine runs them in shared steps.
  b.with_deterministic(o.deterministic);
  b.with_device(*device).with_context_size(o.ctx).with_threads(o.threads).with_max_sequences(
      o.parallel);
  if (Status kv = apply_kv_flags(o.kv, b); !kv.ok()) return fail(kv.message());
  if (o.verbose) {
    b.with_log([](std::string_view line) {
      std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
    });
  }
  auto model = b.build();
  if (!model.ok()) return fail(path + ": " + model.status().message());

  server::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  so.api_key = o.api_key;
  so.parallel = o.parallel;
  so.queue = o.queue;
  so.max_body_bytes = static_cast<size_t>(o.max_body_mb * 1024 * 1024);
  so.model_id = std::filesystem::path(path).stem().string();
  so.created = static_cast<int64_t>(std::time(nullptr));
  so.shutdown_grace = std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000));

  server::HttpServer srv(*model, so);
  if (auto st = srv.bind(); !st.ok()) return fail(st.message());
  std::printf("geniex serve: model '%s' (%s, context %d) listening on %s\n", so.model_id.c_str(),
              model->info().placement.c_str(), model->info().n_ctx, srv.url().c_str());
  std::fflush(stdout);
  std::atomic<bool> done{false};
  std::thread watcher([&] { watch_signals(srv, done); });
  const Status st = srv.run();
  done.store(true);
  watcher.join();
  if (!st.ok()) return fail(st.message());
  std::fprintf(stderr, "geniex serve: stopped\n");
  return kExitOk;
}

}  // namespace

Command register_serve(CLI::App& parent) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* c = parent.add_subcommand("serve", "OpenAI-compatible HTTP server (chat page at /)");
  c->add_option("-m,--model", o->model, "GGUF model (default: Gemma 3 270M from scripts/setup.sh)");
  c->add_option("--host", o->host, "address to listen on")->capture_default_str();
  c->add_option("--port", o->port, "port (0 = any free port)")->capture_default_str();
  c->add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on /v1 and /metrics");
  c->add_option("--parallel", o->parallel, "requests generating at once")->capture_default_str();
  c->add_option("--queue", o->queue, "requests waiting for a slot before 429")
      ->capture_default_str();
  c->add_option("-c,--ctx", o->ctx, "context size in tokens")->capture_default_str();
  c->add_option("-t,--threads", o->threads, "threads (0 = all cores)")->capture_default_str();
  add_kv_flags(c, o->kv);
  c->add_flag("--deterministic", o->deterministic,
              "bit-identical output whether a request runs alone or batched (slower decode for "
              "Q8_0/Q5_0/Q4_0 weights)");
  c->add_option("--device", o->device, "auto, cpu, gpu or npu")->capture_default_str();
  c->add_option("--max-body-mb", o->max_body_mb, "largest request body (413 beyond)")
      ->capture_default_str();
  c->add_option("--shutdown-timeout", o->shutdown_timeout,
                "seconds in-flight requests may run after SIGINT/SIGTERM")
      ->capture_default_str();
  c->add_flag("-v,--verbose", o->verbose, "log placement decisions to stderr");
  return {c, [o] { return run_serve(*o); }};
}

}  // namespace geniex::cli
