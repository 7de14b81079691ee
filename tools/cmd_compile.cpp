#include "cmd_compile.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "default_model.h"
#include "geniex/geniex.hpp"
#include "human_units.h"
#include "model_flags.h"
#include "number_flags.h"

namespace geniex::cli {
namespace {

namespace fs = std::filesystem;

struct CompileOptions {
  std::string model;
  std::string device = "npu";
  int32_t offload_layers = -1;  ///< --offload-layers: compile only the stages placed there
  std::string target = "v73";
  std::string precision = "fp16";  ///< --precision: the plugin's precision= (fp16 or w8)
  int32_t soc = 0;                 // 0: the usual SoC of the target
  std::string plugin_dir;
  std::string cache_dir;
  int32_t ctx = 512;
  bool verbose = false;
};

// A SoC with that Hexagon architecture (QNN SoC ids): the runtime prepares for the SoC's arch.
int soc_of(const std::string& target) {
  static const std::map<std::string, int> kSoc = {
      {"v73", 60},  // Snapdragon X Elite (SC8380XP); also SM8550 (43)
      {"v75", 57},  // SM8650
      {"v79", 69},  // SM8750
  };
  auto it = kSoc.find(target);
  return it == kSoc.end() ? 0 : it->second;
}

// The plugin's default cache folder (src/backends/npu/qnn/qnn_cache.h), resolved here so the
// command can list it and pass it explicitly.
fs::path default_cache_dir() {
  if (const char* e = std::getenv("GENIEX_QNN_CACHE_DIR"); e != nullptr && *e != '\0') return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return fs::path(x) / "geniex" / "qnn";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return fs::path(h) / ".cache" / "geniex" / "qnn";
  }
  return {};
}

// The QNN plugin's folder: $GENIEX_PLUGIN_DIR, else <exe dir>/../plugins/qnn (the build tree),
// else <exe dir>/../lib/geniex/plugins/qnn (an installed tree).
std::string default_plugin_dir() {
  if (const char* e = std::getenv("GENIEX_PLUGIN_DIR"); e != nullptr && *e != '\0') return e;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path qnn = exe.parent_path().parent_path() / "plugins" / "qnn";
  if (fs::is_directory(qnn, ec)) return qnn.string();
  // An installed tree: <prefix>/bin/geniex, <prefix>/lib/geniex/plugins/qnn.
  const fs::path installed = exe.parent_path().parent_path() / "lib" / "geniex" / "plugins" / "qnn";
  return fs::is_directory(installed, ec) ? installed.string() : std::string();
}

std::map<std::string, uintmax_t> entries(const fs::path& dir) {
  std::map<std::string, uintmax_t> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".qnnctx") {
      out[it->path().filename().string()] = it->file_size(ec);
    }
  }
  return out;
}

int run_compile(const CompileOptions& o) {
  if (o.device != "npu") {
    std::fprintf(stderr, "geniex compile: --device %s: only npu graphs are compiled ahead\n",
                 o.device.c_str());
    return kExitUsage;
  }
  if (o.precision != "fp16" && o.precision != "w8") {
    // w8a16 / w4a16 graphs take their activation ranges from their first real step
    // (src/backends/npu/qnn/README.md), so their contexts are keyed by what a run calibrates.
    std::fprintf(stderr,
                 "geniex compile: --precision %s: only fp16 and w8 graphs are compiled ahead "
                 "(w8a16 / w4a16 calibrate on their first real step)\n",
                 o.precision.c_str());
    return kExitUsage;
  }
  const int32_t soc = o.soc != 0 ? o.soc : soc_of(o.target);
  if (soc == 0) {
    std::fprintf(stderr,
                 "geniex compile: no default SoC for --target %s; give its QNN SoC id with "
                 "--soc\n",
                 o.target.c_str());
    return kExitUsage;
  }
  std::string path = o.model;
  if (path.empty()) {
    auto d = default_model_path();
    if (!d.ok()) {
      std::fprintf(stderr, "geniex compile: %s\n", d.status().message().c_str());
      return kExitError;
    }
    path = *d;
  }
  const fs::path cache = o.cache_dir.empty() ? default_cache_dir() : fs::path(o.cache_dir);
  if (cache.empty()) {
    std::fprintf(stderr, "geniex compile: no cache folder (set --cache-dir or HOME)\n");
    return kExitError;
  }
  const auto before = entries(cache);
  ModelBuilder b(path);
  b.with_device(Device::npu()).with_offload_layers(o.offload_layers).with_context_size(o.ctx);
  b.with_npu_config("htp_arch=" + o.target + ";soc_model=" + std::to_string(soc) + ";precision=" +
                    o.precision + ";cache_dir=" + cache.string() + (o.verbose ? ";trace=1" : ""));
  const std::string plugins = o.plugin_dir.empty() ? default_plugin_dir() : o.plugin_dir;
  if (!plugins.empty()) b.with_plugin_dir(plugins);
  if (o.verbose) {
    b.with_log([](std::string_view line) {
      std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto m = b.build();
  if (!m.ok()) {
    std::fprintf(stderr, "geniex compile: %s: %s\n", path.c_str(), m.status().message().c_str());
    return kExitError;
  }
  const std::string placement = m->info().placement;
  if (placement.find("npu(qnn-htp") == std::string::npos) {
    std::fprintf(stderr,
                 "geniex compile: no stage was placed on the QNN HTP plugin (placement: %s); "
                 "is libgeniex_npu_qnn.so in --plugin-dir (%s)? -v shows why\n",
                 placement.c_str(), plugins.empty() ? "default folders" : plugins.c_str());
    return kExitError;
  }
  // A prefill chunk (two tokens, padded to the static chunk) and two decode steps.
  const std::vector<int32_t> two = {1, 2};
  auto l = m->logits(std::span<const int32_t>(two));
  GenerationConfig g;
  g.temperature = 0.0f;
  g.max_tokens = 2;
  g.ignore_eos = true;
  const std::vector<int32_t> one = {1};
  auto gen =
      l.ok() ? m->generate(std::span<const int32_t>(one), g) : Result<Generation>(l.status());
  if (!gen.ok()) {
    std::fprintf(stderr, "geniex compile: %s\n", gen.status().message().c_str());
    return kExitError;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after = entries(cache);
  uint64_t new_bytes = 0;
  int made = 0;
  std::printf("model:     %s\nplacement: %s\ncache:     %s\n", path.c_str(), placement.c_str(),
              cache.string().c_str());
  for (const auto& [name, size] : after) {
    if (before.count(name) != 0) continue;
    std::printf("  new %s  %s\n", name.c_str(), human_bytes(size, 2).c_str());
    new_bytes += size;
    ++made;
  }
  std::printf(
      "%d new context binar%s (%s) for Hexagon %s (SoC %d) in %.2f s; the cache holds %zu\n", made,
      made == 1 ? "y" : "ies", human_bytes(new_bytes, 2).c_str(), o.target.c_str(), soc, secs,
      after.size());
  return kExitOk;
}

}  // namespace

Command register_compile(CLI::App& parent) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* c = parent.add_subcommand(
      "compile", "prepare a model's NPU (QNN HTP) graphs ahead of time into the context cache");
  c->add_option("-m,--model", o->model, "GGUF model (default: see `geniex list`)");
  c->add_option("--device", o->device, "npu (the only device compiled ahead)")
      ->capture_default_str();
  add_offload_option(c, o->offload_layers);
  c->add_option("--target", o->target, "Hexagon architecture: v73, v75, v79, ...")
      ->capture_default_str();
  c->add_option("--precision", o->precision,
                "fp16 (weights held in fp16) or w8 (int8 per-channel weights, fp16 activations)")
      ->capture_default_str();
  add_count_option(c, "--soc", o->soc, 0, 1000,
                   "QNN SoC id (default: 60 for v73, 57 for v75, 69 for v79)");
  c->add_option("--plugin-dir", o->plugin_dir,
                "folder of libgeniex_npu_qnn.so (default: $GENIEX_PLUGIN_DIR, else "
                "<exe>/../plugins/qnn)");
  c->add_option("--cache-dir", o->cache_dir,
                "context cache (default: $GENIEX_QNN_CACHE_DIR, else ~/.cache/geniex/qnn)");
  add_context_option(c, o->ctx, "context size the graphs are prepared for (0 = the model's own)");
  c->add_flag("-v,--verbose", o->verbose,
              "log placement decisions and, per graph, its QNN nodes and prepare / restore times "
              "to stderr");
  return {c, [o] { return run_compile(*o); }};
}

}  // namespace geniex::cli
