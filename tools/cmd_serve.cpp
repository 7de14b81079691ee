#include "cmd_serve.h"

#include <pthread.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;  // POSIX: the process's environment, for the GENIEX_* scan

#include "default_model.h"
#include "flag_compat.h"
#include "geniex/geniex.hpp"
#include "kv_flags.h"
#include "model_flags.h"
#include "number_flags.h"
#include "sampling_flags.h"
#include "server/http_server.h"
#include "server/model_registry.h"

namespace geniex::cli {
namespace {

/// The largest --max-body-mb: a request body is held in memory whole, and 1 GiB is far beyond
/// any chat request (images included) while still short of exhausting the machine.
constexpr double kMaxBodyMb = 1024.0;

struct ServeOptions {
  std::string model;                ///< $GENIEX_MODEL (when no -m)
  std::vector<std::string> models;  ///< -m, repeatable
  std::string model_dir;            ///< --model-dir: every GGUF in it
  int max_loaded = 0;               ///< --max-loaded (0: no limit)
  std::string models_memory;        ///< --models-memory (empty: no budget)
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
  int32_t offload_layers = -1;  ///< --offload-layers (or -ngl)
  std::string npu_config;       ///< --npu-config
  double max_body_mb = 4.0;
  double shutdown_timeout = 5.0;
  bool verbose = false;
  bool no_access_log = false;
  int max_conns_per_client = 64;
  int max_conns = 256;
  /// The defaults of requests that omit a field. max_tokens -1 unless -n is given: then chat
  /// requests run to the end or a full context and completions get 16 tokens (OpenAI's API).
  SamplingOptions sampling;
  IgnoredFlags ignored;
  const CLI::Option* max_tokens_flag = nullptr;
  std::string mmproj;      ///< --mmproj: the vision encoder (empty: discover beside the model)
  bool no_mmproj = false;  ///< --no-mmproj: serve text only, no discovery
  std::vector<std::string> image_dirs;  ///< --allow-image-dir: file:// image URLs allowed here
};

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex serve: %s\n", what.c_str());
  return kExitError;
}

int usage(const std::string& what) {
  std::fprintf(stderr, "geniex serve: %s\n", what.c_str());
  return kExitUsage;
}

/// One stderr line when /v1/chat/completions will not use a template of the model's own.
void note_chat_template(const ModelInfo& info, const std::string& model_id) {
  const std::string& origin = info.chat_template_origin;
  if (origin == "file") return;
  if (origin.starts_with("builtin:")) {
    std::fprintf(stderr,
                 "geniex serve: note: %s has no chat template of its own; /v1/chat/completions "
                 "uses GenieX's built-in %s template. A base model (not instruction-tuned) "
                 "answers chat poorly: serve an instruction-tuned model, or use "
                 "/v1/completions.\n",
                 model_id.c_str(), origin.substr(8).c_str());
  } else {
    std::fprintf(stderr,
                 "geniex serve: note: %s has no chat template and GenieX has none for its "
                 "architecture: /v1/chat/completions answers 400; use /v1/completions.\n",
                 model_id.c_str());
  }
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

// ---- Configuration from the environment (the container's way; flags win) -------------------
// The GENIEX_* variables `geniex serve` reads, each standing for a flag; GENIEX_API_KEY_FILE is a
// file holding the key (a compose/Kubernetes secret).
constexpr const char* kServeEnv[] = {"GENIEX_HOST",    "GENIEX_PORT",         "GENIEX_MODEL",
                                     "GENIEX_API_KEY", "GENIEX_API_KEY_FILE", "GENIEX_PARALLEL",
                                     "GENIEX_CTX",     "GENIEX_DEVICE",       "GENIEX_THREADS"};
// Other GENIEX_* names the project reads elsewhere (plugins, QNN, the build and test scripts):
// set, they are not typos.
constexpr const char* kOtherEnv[] = {
    "GENIEX_PLUGIN_DIR",   "GENIEX_QNN_CACHE_DIR", "GENIEX_QNN_LIB_DIR",  "GENIEX_SOURCE_DIR",
    "GENIEX_BUILD_DIR",    "GENIEX_SHARED_DIR",    "GENIEX_LLAMACPP_BIN", "GENIEX_CI_STAGES",
    "GENIEX_FUZZ_SECONDS", "GENIEX_WERROR",        "GENIEX_BUILD_PYTHON"};

/// $name when set and not empty.
std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

/// A whole number from $name in [lo, hi]; nullopt when unset.
Result<std::optional<int32_t>> env_count(const char* name, int32_t lo, int32_t hi) {
  auto text = env_value(name);
  if (!text) return std::optional<int32_t>();
  GENIEX_ASSIGN_OR_RETURN(const int64_t v, parse_count(std::string("$") + name, *text, lo, hi));
  return std::optional<int32_t>(static_cast<int32_t>(v));
}

/// One warning per GENIEX_* variable no part of GenieX reads (a typo, most likely).
void warn_unknown_env() {
  std::vector<std::string> known(std::begin(kServeEnv), std::end(kServeEnv));
  known.insert(known.end(), std::begin(kOtherEnv), std::end(kOtherEnv));
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("GENIEX_")) continue;
    const std::string name(entry.substr(0, entry.find('=')));
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == name;
    if (ok) continue;
    const std::string near = nearest(name, known);
    std::fprintf(stderr, "geniex serve: warning: unknown environment variable %s ignored%s\n",
                 name.c_str(), near.empty() ? "" : (" (did you mean " + near + "?)").c_str());
  }
}

/// The key in $GENIEX_API_KEY_FILE: the file's text without trailing white space.
Result<std::string> read_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(StatusCode::kInvalidArgument,
                  "$GENIEX_API_KEY_FILE " + path + ": cannot read it: " + std::strerror(errno));
  }
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back())) != 0) key.pop_back();
  if (key.empty()) {
    return Status(StatusCode::kInvalidArgument, "$GENIEX_API_KEY_FILE " + path + ": empty file");
  }
  if (key.find_first_of("\r\n") != std::string::npos) {
    return Status(StatusCode::kInvalidArgument,
                  "$GENIEX_API_KEY_FILE " + path + ": the key must be one line");
  }
  return key;
}

/// True when the option was given on the command line.
bool given(const CLI::App& app, const std::string& name) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  return opt != nullptr && opt->count() > 0;
}

/// Fills the settings whose flags were not given from GENIEX_* variables; a bad value is an
/// error naming the variable.
Status apply_env(ServeOptions& o, const CLI::App& app) {
  warn_unknown_env();
  if (!given(app, "--host")) {
    if (auto v = env_value("GENIEX_HOST")) o.host = *v;
  }
  if (!given(app, "--port")) {
    GENIEX_ASSIGN_OR_RETURN(auto v, env_count("GENIEX_PORT", 0, 65535));
    if (v) o.port = *v;
  }
  if (!given(app, "--model")) {
    if (auto v = env_value("GENIEX_MODEL")) o.model = *v;
  }
  const auto key = env_value("GENIEX_API_KEY");
  const auto key_file = env_value("GENIEX_API_KEY_FILE");
  if (key && key_file) {
    return Status(StatusCode::kInvalidArgument,
                  "$GENIEX_API_KEY and $GENIEX_API_KEY_FILE are both set: set one");
  }
  if (!given(app, "--api-key")) {
    if (key) o.api_key = *key;
    if (key_file) {
      GENIEX_ASSIGN_OR_RETURN(o.api_key, read_key_file(*key_file));
    }
  }
  if (!given(app, "--parallel")) {
    GENIEX_ASSIGN_OR_RETURN(auto v, env_count("GENIEX_PARALLEL", 1, 1024));
    if (v) o.parallel = *v;
  }
  if (!given(app, "--ctx")) {
    GENIEX_ASSIGN_OR_RETURN(auto v,
                            env_count("GENIEX_CTX", 0, std::numeric_limits<int32_t>::max()));
    if (v && *v == 1) {
      return Status(StatusCode::kInvalidArgument,
                    "$GENIEX_CTX 1: too small (at least 2, or 0 for the model's own)");
    }
    if (v) o.ctx = *v;
  }
  if (!given(app, "--device")) {
    if (auto v = env_value("GENIEX_DEVICE")) {
      if (auto d = Device::parse(*v); !d.ok()) {
        return Status(StatusCode::kInvalidArgument,
                      "$GENIEX_DEVICE " + *v + ": " + d.status().message());
      }
      o.device = *v;
    }
  }
  if (!given(app, "--threads")) {
    GENIEX_ASSIGN_OR_RETURN(auto v, env_count("GENIEX_THREADS", 0, ModelBuilder::kMaxThreads));
    if (v) o.threads = *v;
  }
  return Status::ok_status();
}

/// A loopback address: only this machine can connect.
/// The models to serve: each -m (or $GENIEX_MODEL, or the default chat model), then every
/// GGUF of --model-dir in name order. Ids (file stems) must be distinct.
Result<std::vector<server::ModelRegistry::Entry>> served_models(const ServeOptions& o) {
  std::vector<std::string> paths = o.models;
  if (paths.empty() && !o.model.empty()) paths.push_back(o.model);
  if (!o.model_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(o.model_dir, ec)) {
      return Status(StatusCode::kInvalidArgument,
                    "--model-dir " + o.model_dir + ": no such directory");
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(o.model_dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file(ec) && e.path().extension() == ".gguf" && !name.starts_with("mmproj")) {
        found.push_back(e.path().string());
      }
    }
    if (ec) {
      return Status(StatusCode::kInvalidArgument,
                    "--model-dir " + o.model_dir + ": " + ec.message());
    }
    std::sort(found.begin(), found.end());
    if (found.empty() && paths.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "--model-dir " + o.model_dir + ": no .gguf files in it");
    }
    paths.insert(paths.end(), found.begin(), found.end());
  }
  if (paths.empty()) {
    // The server's page and /v1/chat/completions want an instruction-tuned model.
    GENIEX_ASSIGN_OR_RETURN(std::string p, default_chat_model_path());
    paths.push_back(p);
  }
  std::vector<server::ModelRegistry::Entry> out;
  for (const std::string& p : paths) {
    const std::string id = std::filesystem::path(p).stem().string();
    auto same = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.id == id; });
    if (same == out.end()) {
      out.push_back({id, p});
    } else if (std::filesystem::weakly_canonical(same->path) !=
               std::filesystem::weakly_canonical(p)) {
      return Status(StatusCode::kInvalidArgument,
                    "two models named '" + id + "': " + same->path + " and " + p);
    }
  }
  return out;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

int run_serve(const ServeOptions& o) {
  // Every flag is checked before the model loads (CLI11 checks the ranges of the others).
  if (Status s = validate_sampling(o.sampling); !s.ok()) return usage(s.message());
  if (!is_loopback(o.host) && o.api_key.empty()) {
    std::fprintf(stderr,
                 "geniex serve: warning: listening on %s without an API key: anyone who can "
                 "reach this address can use the model (set --api-key, $GENIEX_API_KEY or "
                 "$GENIEX_API_KEY_FILE)\n",
                 o.host.c_str());
  }
  auto device = Device::parse(o.device);
  if (!device.ok()) return usage("--device: " + device.status().message());
  const auto offload = offload_layers_of(o.offload_layers, o.ignored);
  if (!offload.ok()) return usage(offload.status().message());
  auto served = served_models(o);
  if (!served.ok()) {
    return served.status().code() == StatusCode::kInvalidArgument ? usage(served.status().message())
                                                                  : fail(served.status().message());
  }
  const std::vector<server::ModelRegistry::Entry>& entries = *served;
  const bool several = entries.size() > 1 || !o.model_dir.empty();
  if (several && !o.mmproj.empty()) {
    return usage(
        "--mmproj names one model's encoder; with several models each finds its "
        "mmproj-*.gguf beside it");
  }
  int64_t models_memory = 0;
  if (!o.models_memory.empty()) {
    auto m = parse_size("--models-memory", o.models_memory, int64_t{1} << 50);
    if (!m.ok()) return usage(m.status().message());
    models_memory = *m;
  }
  {
    ModelBuilder probe(entries[0].path);
    if (Status kv = apply_kv_flags(o.kv, probe); !kv.ok()) return usage(kv.message());
  }
  const std::string path = entries[0].path;
  if (!several) {
    // The given --mmproj, or the one fitting mmproj-*.gguf beside the model (model_flags).
    auto mmproj = resolve_mmproj(path, o.mmproj, o.no_mmproj, "geniex serve");
    if (!mmproj.ok()) {
      return mmproj.status().code() == StatusCode::kInvalidArgument
                 ? usage(mmproj.status().message())
                 : fail(mmproj.status().message());
    }
  }
  // Builds any served model with the same flags (the registry calls it on first use). One
  // sequence per generating request; the batching engine runs them in shared steps.
  auto build_model = [&o, dev = *device,
                      n_offload = *offload](const std::string& p) -> Result<Model> {
    ModelBuilder b(p);
    b.with_deterministic(o.deterministic);
    b.with_device(dev)
        .with_offload_layers(n_offload)
        .with_npu_config(o.npu_config)
        .with_context_size(o.ctx)
        .with_threads(o.threads)
        .with_max_sequences(o.parallel);
    GENIEX_TRY(apply_kv_flags(o.kv, b));
    GENIEX_ASSIGN_OR_RETURN(std::string mmproj,
                            resolve_mmproj(p, o.mmproj, o.no_mmproj, "geniex serve"));
    b.with_mmproj(mmproj);
    if (o.verbose) {
      b.with_log([](std::string_view line) {
        std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
      });
    }
    return b.build();
  };
  server::ImageOptions images;
  for (const std::string& d : o.image_dirs) {
    char* real = ::realpath(d.c_str(), nullptr);
    if (!real) return usage("--allow-image-dir " + d + ": no such directory");
    std::string canonical = real;
    std::free(real);
    if (!std::filesystem::is_directory(canonical)) {
      return usage("--allow-image-dir " + d + ": not a directory");
    }
    images.allowed_dirs.push_back(std::move(canonical));
  }
  // A taken port fails now, not after the model has loaded (bind() checks again below).
  if (Status free = server::probe_bind(o.host, o.port); !free.ok()) return fail(free.message());
  // Signals go to the watcher thread only: block them before any thread starts (the model's
  // thread pool included), so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server

  auto built = build_model(path);
  if (!built.ok()) return fail(path + ": " + built.status().message());
  auto loaded = std::make_shared<server::LoadedModel>(std::move(*built));
  Model* model = &loaded->model;
  std::unique_ptr<server::ModelRegistry> registry;
  if (several) {
    server::ModelRegistry::Limits limits;
    limits.max_loaded = o.max_loaded;
    limits.max_bytes = models_memory;
    registry = std::make_unique<server::ModelRegistry>(entries, build_model, limits);
    registry->pin(entries[0].id, loaded);
  }
  for (const std::string& w : model->info().warnings) {
    std::fprintf(stderr, "geniex serve: warning: %s\n", w.c_str());
  }

  server::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  so.api_key = o.api_key;
  so.parallel = o.parallel;
  so.queue = o.queue;
  // Both in range (add_real_option): no overflow, NaN or negative value reaches the casts.
  so.max_body_bytes = static_cast<size_t>(std::llround(o.max_body_mb * 1024 * 1024));
  so.model_id = entries[0].id;
  so.created = static_cast<int64_t>(std::time(nullptr));
  so.shutdown_grace = std::chrono::milliseconds(std::llround(o.shutdown_timeout * 1000));
  so.defaults = config_of(o.sampling);
  if (o.max_tokens_flag->count() == 0) so.defaults.max_tokens = -1;  // no server default
  so.access_log = !o.no_access_log;
  so.max_conns_per_client = o.max_conns_per_client;
  so.max_conns = o.max_conns;
  so.images = std::move(images);

  server::HttpServer srv(*model, so, registry.get());
  if (auto st = srv.bind(); !st.ok()) return fail(st.message());
  std::printf("geniex serve: model '%s' (%s, context %d) listening on %s\n", so.model_id.c_str(),
              model->info().placement.c_str(), model->info().n_ctx, srv.url().c_str());
  if (registry) {
    std::printf("geniex serve: %zu models served (the others load on their first request):",
                entries.size());
    for (const auto& e : entries) std::printf(" %s", e.id.c_str());
    std::printf("\n");
  }
  std::fflush(stdout);
  note_chat_template(model->info(), so.model_id);
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
  c->add_option("-m,--model", o->models,
                "GGUF model (default: the chat model, SmolLM2 135M Instruct; see `geniex list`); "
                "repeat it to serve several, picked by the request's \"model\" (the file's "
                "name without .gguf); the first is the default and loads at start")
      ->allow_extra_args(false);
  c->add_option("--model-dir", o->model_dir,
                "serve every .gguf in DIR too (mmproj-*.gguf excepted), each loaded on its "
                "first request");
  add_count_option(c, "--max-loaded", o->max_loaded, 0, 1 << 16,
                   "models loaded at once; the least recently used idle one is unloaded "
                   "(0 = no limit)");
  c->add_option("--models-memory", o->models_memory,
                "memory budget of the loaded models, weights + KV (e.g. 8G); idle ones are "
                "unloaded least recently used first");
  c->add_option("--host", o->host, "address to listen on")->capture_default_str();
  add_count_option(c, "--port", o->port, 0, 65535, "port (0 = any free port)");
  c->add_option("--api-key", o->api_key,
                "require 'Authorization: Bearer KEY' on /v1, /props and /metrics");
  add_count_option(c, "--parallel", o->parallel, 1, 1024, "requests generating at once");
  add_count_option(c, "--queue", o->queue, 0, 1 << 20, "requests waiting for a slot before 429");
  add_context_option(c, o->ctx, "context size in tokens (0 = the model's own)");
  add_count_option(c, "-t,--threads", o->threads, 0, ModelBuilder::kMaxThreads,
                   "threads (0 = the CPUs this process may use: affinity and cgroup quota)");
  add_kv_flags(c, o->kv);
  c->add_flag("--deterministic", o->deterministic,
              "bit-identical output whether a request runs alone or batched (slower decode for "
              "Q8_0/Q5_0/Q4_0 weights)");
  c->add_option("--device", o->device, "auto, cpu, gpu or npu")->capture_default_str();
  add_offload_option(c, o->offload_layers);
  add_npu_config_option(c, o->npu_config);
  add_real_option(c, "--max-body-mb", o->max_body_mb, 1e-3, kMaxBodyMb,
                  "largest request body in MiB (413 beyond)");
  add_real_option(c, "--shutdown-timeout", o->shutdown_timeout, 0.0, 86400.0,
                  "seconds in-flight requests may run after SIGINT/SIGTERM");
  c->add_flag("-v,--verbose", o->verbose, "log placement decisions to stderr");
  c->add_flag("--no-access-log", o->no_access_log, "do not log one line per request to stderr");
  add_count_option(c, "--max-conns-per-client", o->max_conns_per_client, 1, 1 << 20,
                   "open connections one client address may hold (503 beyond)");
  add_count_option(c, "--max-conns", o->max_conns, 1, 1 << 20,
                   "open connections in all (503 beyond)");
  add_mmproj_flags(c, o->mmproj, o->no_mmproj);
  c->add_option("--allow-image-dir", o->image_dirs,
                "directory whose files chat requests may name as file:// image URLs "
                "(repeatable; default: none, only data: URLs)")
      ->allow_extra_args(false);
  o->sampling.max_tokens = -1;  // see ServeOptions::sampling
  add_sampling_flags(c, o->sampling);
  o->max_tokens_flag = c->get_option("--max-tokens");
  add_ignored_llama_flags(c, o->ignored);
  c->footer(
      "Request defaults: the sampling flags (-n, --temp, --top-k, --top-p, --min-p, "
      "--repeat-penalty, --presence-penalty, --frequency-penalty, --repeat-last-n, -s/--seed, "
      "--stop, --ignore-eos) set what a request gets for a field it omits; a field the request "
      "sends wins. Without -n, chat requests generate until the end or a full context and "
      "completions requests 16 tokens (OpenAI's defaults). GET /props shows the defaults.\n\n"
      "Access log: one line per request on stderr (off with --no-access-log), never the "
      "content:\n"
      "  geniex serve: access: METHOD PATH STATUS in=PROMPT_TOKENS out=COMPLETION_TOKENS "
      "ms=MILLISECONDS\n"
      "in/out are '-' for requests that generate nothing; ms runs to the last byte sent; "
      "'client-closed' ends the line when the client hung up mid-stream.");
  c->footer(std::string(c->get_footer()) +
            "\n\nEnvironment (for containers; a flag given on the command line wins): "
            "GENIEX_HOST, GENIEX_PORT, GENIEX_MODEL, GENIEX_API_KEY or GENIEX_API_KEY_FILE (a "
            "file holding the key), GENIEX_PARALLEL, GENIEX_CTX, GENIEX_DEVICE, GENIEX_THREADS "
            "stand for --host, --port, --model, --api-key, --parallel, --ctx, --device, "
            "--threads; other GENIEX_* names get a warning. Listening on a non-loopback address "
            "without an API key gets a warning.");
  return {c, [o, c] {
            if (Status env = apply_env(*o, *c); !env.ok()) return usage(env.message());
            return run_serve(*o);
          }};
}

Result<ServeEndpoint> serve_endpoint_from_env() {
  ServeEndpoint e;
  if (auto v = env_value("GENIEX_HOST")) e.host = *v;
  GENIEX_ASSIGN_OR_RETURN(auto port, env_count("GENIEX_PORT", 0, 65535));
  if (port) e.port = *port;
  return e;
}

}  // namespace geniex::cli
