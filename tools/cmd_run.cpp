#include "cmd_run.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "default_model.h"
#include "geniex/geniex.hpp"
#include "kv_flags.h"

namespace geniex::cli {
namespace {

using Json = nlohmann::ordered_json;

// Shared by run and chat.
struct ModelOptions {
  std::string model;
  std::string device = "auto";
  int32_t ctx = 4096;
  int32_t threads = 0;
  int32_t batch = 512;
  bool verbose = false;
  bool explain = false;  ///< print the capability table and placement before generating
  KvOptions kv;
  std::string load_state;  ///< resume the context from this file before generating
  std::string save_state;  ///< write the context here afterwards
};

struct SamplingOptions {
  int32_t max_tokens = 256;
  float temp = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t repeat_last_n = 64;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

struct RunOptions {
  ModelOptions m;
  SamplingOptions s;
  std::string prompt;
  std::string file;
  std::string system;
  bool raw = false;
  bool json = false;
};

struct ChatOptions {
  ModelOptions m;
  SamplingOptions s;
  std::string system;
};

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex: %s\n", what.c_str());
  return kExitError;
}

void add_model_flags(CLI::App* c, ModelOptions& o) {
  c->add_option("-m,--model", o.model, "GGUF model (default: Gemma 3 270M from scripts/setup.sh)");
  c->add_option("--device", o.device, "auto, cpu, gpu or npu")->capture_default_str();
  c->add_option("-c,--ctx", o.ctx, "context size in tokens")->capture_default_str();
  c->add_option("-t,--threads", o.threads, "threads (0 = all cores)")->capture_default_str();
  c->add_option("-b,--batch", o.batch, "prompt tokens per step")->capture_default_str();
  c->add_flag("-v,--verbose", o.verbose, "log placement decisions to stderr");
  c->add_flag("--explain-placement", o.explain,
              "print each unit's capability table and where every stage runs (and why) to stderr");
  add_kv_flags(c, o.kv);
  c->add_option("--load-state", o.load_state,
                "resume the cached context saved by --save-state (same model and KV type)");
  c->add_option("--save-state", o.save_state, "save the cached context to this file at the end");
}

void add_sampling_flags(CLI::App* c, SamplingOptions& o) {
  c->add_option("-n,--max-tokens", o.max_tokens, "tokens to generate at most")
      ->capture_default_str();
  c->add_option("--temp", o.temp, "temperature (0 = greedy)")->capture_default_str();
  c->add_option("--top-k", o.top_k, "top-k (0 = off)")->capture_default_str();
  c->add_option("--top-p", o.top_p, "top-p (1 = off)")->capture_default_str();
  c->add_option("--min-p", o.min_p, "min-p (0 = off)")->capture_default_str();
  c->add_option("--repeat-penalty", o.repeat_penalty, "repetition penalty (1 = off)")
      ->capture_default_str();
  c->add_option("--presence-penalty", o.presence_penalty, "presence penalty")
      ->capture_default_str();
  c->add_option("--frequency-penalty", o.frequency_penalty, "frequency penalty")
      ->capture_default_str();
  c->add_option("--repeat-last-n", o.repeat_last_n, "penalty window (-1 = all)")
      ->capture_default_str();
  c->add_option("--seed", o.seed, "sampler seed (-1 = random)")->capture_default_str();
  c->add_option("--stop", o.stop, "stop string (repeatable)");
  c->add_flag("--ignore-eos", o.ignore_eos, "do not stop at end-of-generation tokens");
}

GenerationConfig config_of(const SamplingOptions& o) {
  GenerationConfig c;
  c.max_tokens = o.max_tokens;
  c.temperature = o.temp;
  c.top_k = o.top_k;
  c.top_p = o.top_p;
  c.min_p = o.min_p;
  c.repetition_penalty = o.repeat_penalty;
  c.presence_penalty = o.presence_penalty;
  c.frequency_penalty = o.frequency_penalty;
  c.penalty_last_n = o.repeat_last_n;
  if (o.seed >= 0) c.seed = static_cast<uint64_t>(o.seed);
  c.stop = o.stop;
  c.ignore_eos = o.ignore_eos;
  return c;
}

Result<Model> load(const ModelOptions& o) {
  std::string path = o.model;
  if (path.empty()) {
    GENIEX_ASSIGN_OR_RETURN(path, default_model_path());
  }
  GENIEX_ASSIGN_OR_RETURN(Device device, Device::parse(o.device));
  ModelBuilder b(path);
  b.with_device(device).with_context_size(o.ctx).with_threads(o.threads).with_batch_size(o.batch);
  GENIEX_TRY(apply_kv_flags(o.kv, b));
  if (o.verbose) {
    b.with_log([](std::string_view line) {
      std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
    });
  }
  auto m = b.build();
  if (!m.ok()) return Status(m.status().code(), path + ": " + m.status().message());
  if (!o.load_state.empty()) GENIEX_TRY(m->load_state(o.load_state));
  if (o.explain) std::fprintf(stderr, "%s", m->explain_placement().c_str());
  return m;
}

std::string timings_line(const Generation& g) {
  const Timings& t = g.timings;
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "prompt: %d tokens (%d cached) %.1f ms, %.2f tok/s | generation: %d tokens "
                "%.1f ms, %.2f tok/s | TTFT %.1f ms | stop: %s",
                t.prompt_tokens, t.cached_tokens, t.prompt_ms, t.prompt_tokens_per_second(),
                t.generated_tokens, t.generation_ms, t.generation_tokens_per_second(), t.ttft_ms,
                std::string(stop_reason_name(g.stop_reason)).c_str());
  return buf;
}

// Streams text to stdout; returns false (cancel) after Ctrl-C.
bool print_piece(std::string_view text, int32_t) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return !g_interrupted.load();
}

int run_run(const RunOptions& o) {
  std::string prompt = o.prompt;
  if (!o.file.empty()) {
    std::ifstream f(o.file, std::ios::binary);
    if (!f) return fail("cannot read prompt file " + o.file);
    std::ostringstream ss;
    ss << f.rdbuf();
    prompt = ss.str();
  }
  if (prompt.empty()) return fail("no prompt: give -p TEXT or -f FILE");
  auto model = load(o.m);
  if (!model.ok()) return fail(model.status().message());
  const GenerationConfig cfg = config_of(o.s);
  std::signal(SIGINT, on_sigint);
  TokenCallback cb;
  if (!o.json) cb = print_piece;
  Result<Generation> gen = Status(StatusCode::kInternal, "not run");
  if (o.raw) {
    gen = model->generate(prompt, cfg, cb);
  } else {
    std::vector<ChatMessage> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    msgs.push_back({"user", prompt});
    gen = model->chat(msgs, cfg, cb);
  }
  std::signal(SIGINT, SIG_DFL);
  if (!gen.ok()) {
    if (!o.json) std::fputc('\n', stdout);
    return fail(gen.status().message());
  }
  if (!o.m.save_state.empty()) {
    if (Status s = model->save_state(o.m.save_state); !s.ok()) return fail(s.message());
  }
  if (o.json) {
    const Timings& t = gen->timings;
    Json j;
    j["text"] = gen->text;
    j["prompt_tokens"] = gen->prompt_tokens;
    j["generated_tokens"] = gen->tokens;
    j["stop_reason"] = std::string(stop_reason_name(gen->stop_reason));
    j["timings"] = {{"prompt_tokens", t.prompt_tokens},
                    {"cached_tokens", t.cached_tokens},
                    {"generated_tokens", t.generated_tokens},
                    {"prompt_ms", t.prompt_ms},
                    {"generation_ms", t.generation_ms},
                    {"ttft_ms", t.ttft_ms},
                    {"prompt_tokens_per_second", t.prompt_tokens_per_second()},
                    {"generation_tokens_per_second", t.generation_tokens_per_second()}};
    const KvStats kv = model->kv_stats();
    j["kv"] = {{"bytes_per_token", kv.bytes_per_token},
               {"cached_tokens", kv.cached_tokens},
               {"bytes_resident", kv.bytes_resident},
               {"bytes_spilled", kv.bytes_spilled},
               {"prefix_hits", kv.prefix_hits}};
    j["model"] = model->info().path;
    j["placement"] = model->info().placement;
    std::printf("%s\n", j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
  } else {
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", timings_line(*gen).c_str());
  }
  return kExitOk;
}

int run_chat(const ChatOptions& o) {
  auto model = load(o.m);
  if (!model.ok()) return fail(model.status().message());
  const bool tty = isatty(STDIN_FILENO) != 0;
  std::vector<ChatMessage> msgs;
  if (!o.system.empty()) msgs.push_back({"system", o.system});
  if (tty) {
    std::fprintf(
        stderr, "geniex chat — %s. /reset starts over, /exit or Ctrl-D quits.\n",
        model->info().name.empty() ? model->info().path.c_str() : model->info().name.c_str());
  }
  const GenerationConfig cfg = config_of(o.s);
  std::string line;
  for (;;) {
    if (tty) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      msgs.resize(o.system.empty() ? 0 : 1);
      model->reset();
      continue;
    }
    if (line.empty()) continue;
    msgs.push_back({"user", line});
    g_interrupted.store(false);
    std::signal(SIGINT, on_sigint);
    auto gen = model->chat(msgs, cfg, print_piece);
    std::signal(SIGINT, SIG_DFL);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!gen.ok()) {
      msgs.pop_back();
      std::fprintf(stderr, "geniex: %s\n", gen.status().message().c_str());
      continue;
    }
    msgs.push_back({"assistant", gen->text});
    if (!o.m.save_state.empty()) {
      if (Status s = model->save_state(o.m.save_state); !s.ok()) {
        std::fprintf(stderr, "geniex: %s\n", s.message().c_str());
      }
    }
    if (tty) std::fprintf(stderr, "[%s]\n", timings_line(*gen).c_str());
  }
  return kExitOk;
}

}  // namespace

Command register_run(CLI::App& parent) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* c = parent.add_subcommand("run", "Generate text from a prompt (streamed)");
  add_model_flags(c, opts->m);
  add_sampling_flags(c, opts->s);
  c->add_option("-p,--prompt", opts->prompt, "prompt text");
  c->add_option("-f,--file", opts->file, "read the prompt from a file");
  c->add_option("-s,--system", opts->system, "system message (chat mode)");
  c->add_flag("--raw", opts->raw,
              "complete the text as is: no chat template, no special tokens beyond BOS");
  c->add_flag("--json", opts->json, "print one JSON object instead of streaming");
  return {c, [opts] { return run_run(*opts); }};
}

Command register_chat(CLI::App& parent) {
  auto opts = std::make_shared<ChatOptions>();
  CLI::App* c = parent.add_subcommand("chat", "Interactive multi-turn chat (chat template)");
  add_model_flags(c, opts->m);
  add_sampling_flags(c, opts->s);
  c->add_option("-s,--system", opts->system, "system message");
  return {c, [opts] { return run_chat(*opts); }};
}

}  // namespace geniex::cli
