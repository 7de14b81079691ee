#include "model_flags.h"

#include <cstdio>
#include <filesystem>
#include <limits>

#include "default_model.h"
#include "number_flags.h"

namespace geniex::cli {
namespace {
constexpr int32_t kMaxInt32 = std::numeric_limits<int32_t>::max();
}  // namespace

void add_model_flags(CLI::App* c, ModelOptions& o) {
  c->add_option("-m,--model", o.model,
                "GGUF model (default: see `geniex list`; GENIEX_MODEL overrides)");
  c->add_option("--device", o.device, "auto, cpu, gpu or npu")->capture_default_str();
  add_context_option(c, o.ctx, "context size in tokens (0 = the model's own)");
  add_count_option(c, "-t,--threads", o.threads, 0, ModelBuilder::kMaxThreads,
                   "threads (0 = the CPUs this process may use)");
  add_count_option(c, "-b,--batch,--batch-size", o.batch, 1, kMaxInt32, "prompt tokens per step");
  c->add_flag("-v,--verbose", o.verbose, "log placement decisions and the sampler seed to stderr");
  c->add_flag("--explain-placement", o.explain,
              "print each unit's capability table and where every stage runs (and why) to stderr");
  add_kv_flags(c, o.kv);
  c->add_option("--load-state", o.load_state,
                "resume the cached context saved by --save-state (same model and KV type)");
  c->add_option("--save-state", o.save_state, "save the cached context to this file at the end");
  c->add_option("--cpu-tuning", o.cpu_tuning,
                "CPU kernel tuning for A/B runs, key=value,...: isa=scalar|sse4|avx2|..., "
                "repack=default|none|all, huge_pages=0|1, prefetch=BYTES, streams=N");
  add_ignored_llama_flags(c, o.ignored);
}

Result<PreparedModel> prepare_model(const ModelOptions& o, DefaultModel which) {
  if (o.ctx < 0) return invalid_argument("-c/--ctx must be >= 0 (0 = the model's own context)");
  if (o.threads < 0) return invalid_argument("-t/--threads must be >= 0 (0 = all usable CPUs)");
  if (o.batch < 1) return invalid_argument("-b/--batch must be >= 1");
  auto device = Device::parse(o.device);
  if (!device.ok()) return invalid_argument("--device: " + device.status().message());
  std::string path = o.model;
  if (path.empty()) {
    GENIEX_ASSIGN_OR_RETURN(
        path, which == DefaultModel::kChat ? default_chat_model_path() : default_model_path());
  }
  auto cpu = parse_cpu_tuning(o.cpu_tuning);
  if (!cpu.ok()) return invalid_argument("--cpu-tuning: " + cpu.status().message());
  ModelBuilder b(path);
  BackendTuning tuning;
  tuning.cpu = std::move(*cpu);
  b.with_tuning(tuning);
  b.with_device(*device).with_context_size(o.ctx).with_threads(o.threads).with_batch_size(o.batch);
  GENIEX_TRY(apply_kv_flags(o.kv, b));
  if (o.verbose) {
    b.with_log([](std::string_view line) {
      std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
    });
  }
  return PreparedModel{path, std::move(b)};
}

Result<Model> load_model(PreparedModel& p, const ModelOptions& o) {
  auto m = p.builder.build();
  if (!m.ok()) return Status(m.status().code(), p.path + ": " + m.status().message());
  for (const std::string& w : m->info().warnings) {
    std::fprintf(stderr, "geniex: warning: %s\n", w.c_str());
  }
  if (!o.load_state.empty()) GENIEX_TRY(m->load_state(o.load_state));
  if (o.explain) std::fprintf(stderr, "%s", m->explain_placement().c_str());
  return m;
}

void note_chat_template(const Model& m) {
  const std::string& origin = m.info().chat_template_origin;
  if (!origin.starts_with("builtin:")) return;
  const std::string name = std::filesystem::path(m.info().path).filename().string();
  std::fprintf(stderr,
               "geniex: note: %s has no chat template of its own; using GenieX's built-in %s "
               "template. A base model (not instruction-tuned) answers chat poorly: use an "
               "instruction-tuned model, or `geniex run --raw` to complete text.\n",
               name.c_str(), origin.substr(8).c_str());
}

}  // namespace geniex::cli
