// `geniex bench -m FILE [-t THREADS] [-p N] [-n N] [-r REPS] [--json]`
//
// Measures the two numbers llama-bench reports, on the same terms:
//   pp<N>  prompt processing: N prompt tokens evaluated in one call from an empty context
//          (tok/s = N / prefill time). The same runs give TTFT (call start to the first
//          sampled token: prefill + one greedy sample).
//   tg<N>  text generation: N tokens decoded one at a time starting from an EMPTY context, as
//          llama-bench's tg does (a one-token prompt, then N-1 single-token steps: N forward
//          passes; tok/s = N / total time, greedy sampling included).
//          --parallel P runs P such generations at once (P threads, P sequences, each its own
//          random first token), which the engine batches: every step is one forward pass over
//          all of them. tok/s is then the aggregate, P * N / wall time of the slowest.
// Token ids are random but fixed (std::mt19937 seeded with --seed, uniform over the vocabulary),
// so no tokenizer work is timed and every repetition evaluates the same ids. One untimed
// warm-up of each test runs first; then --reps repetitions, each reported, plus the median.
// Peak RSS is the process high-water mark (VmHWM; ru_maxrss where /proc is missing) after all
// runs.
//
// --json prints one object:
//   model, name, architecture, n_params, file_bytes, placement, device, threads, n_ctx, n_batch,
//   seed, repetitions, load_ms,
//   pp:   {n_tokens, samples_ms[], samples_tok_s[], median_ms, median_tok_s} or null (-p 0)
//   tg:   {n_tokens, samples_ms[], samples_tok_s[], median_ms, median_tok_s} or null (-n 0)
//   ttft: {n_prompt, samples_ms[], median_ms} or null (-p 0)
//   peak_rss_bytes
//   image (only with --image): {paths[], images, views, prompt_tokens, n_gen, encode_ms,
//          encode_ms_per_view, preprocess_ms, prefill_ms, ttft_ms, tg_tok_s} (each {samples[],
//          median}; encode_ms includes preprocess_ms: the images' decoding and preprocessing)
//
// --image PATH (repeatable) adds an image test after the text tests, reported in a second
// table: per repetition, from an empty context, the images (all before a short text) are
// encoded and prefilled and n_gen tokens decoded. encode = decoding + preprocessing + the
// vision encoder (Model::image_stats), per image and per view (tile or thumbnail); prefill =
// the prompt with the image tokens; TTFT = encode + the call's time to the first token.
#include "cmd_bench.h"

#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "default_model.h"
#include "geniex/geniex.hpp"
#include "kv_flags.h"
#include "model_flags.h"
#include "number_flags.h"

namespace geniex::cli {
namespace {

using Json = nlohmann::ordered_json;

struct BenchOptions {
  std::string model;
  std::string mmproj;
  bool no_mmproj = false;
  std::vector<std::string> images;  ///< --image: the image test
  std::string device = "auto";
  int32_t offload_layers = -1;  ///< --offload-layers
  std::string npu_config;       ///< --npu-config
  int32_t threads = 0;
  int32_t n_prompt = 512;
  int32_t n_gen = 128;
  int32_t reps = 5;
  int32_t ctx = 0;
  int32_t batch = 512;
  uint32_t seed = 42;
  int32_t depth = 0;
  int32_t parallel = 1;
  KvOptions kv;
  std::string cpu_tuning;     ///< --cpu-tuning (parse_cpu_tuning)
  std::string opencl_device;  ///< --opencl-device (OpenclTuning::device_filter)
  bool json = false;
  bool verbose = false;
  bool profile = false;
};

// Per-stage timings of one test, summed over its timed repetitions.
struct StageProfile {
  std::vector<StageTiming> stages;
  double wall_ms = 0.0;  ///< the test's own time (prefill or decode), for the overlap ratio

  void add(const std::vector<StageTiming>& t, double ms) {
    wall_ms += ms;
    for (const auto& x : t) {
      auto it = std::find_if(stages.begin(), stages.end(), [&](const StageTiming& y) {
        return y.stages == x.stages && y.device == x.device;
      });
      if (it == stages.end()) {
        stages.push_back(x);
      } else {
        it->runs += x.runs;
        it->ms += x.ms;
        it->bytes_in += x.bytes_in;
        it->bytes_out += x.bytes_out;
      }
    }
  }
  [[nodiscard]] double busy_ms() const {
    double b = 0.0;
    for (const auto& x : stages) b += x.ms;
    return b;
  }
};

// Samples of one test and their summary.
struct Series {
  int32_t n_tokens = 0;
  std::vector<double> ms;

  [[nodiscard]] static double median_of(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  }
  [[nodiscard]] std::vector<double> tok_s() const {
    std::vector<double> r;
    r.reserve(ms.size());
    for (double m : ms) r.push_back(m > 0 ? n_tokens * 1000.0 / m : 0.0);
    return r;
  }
  [[nodiscard]] double median_ms() const { return median_of(ms); }
  [[nodiscard]] double median_tok_s() const { return median_of(tok_s()); }
};

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex bench: %s\n", what.c_str());
  return kExitError;
}

// VmHWM of /proc/self/status: this image's high-water mark. getrusage's ru_maxrss is the
// fallback only: on Linux it survives execve, so it can report the parent's peak (e.g. a Python
// runner's) instead of ours.
int64_t peak_rss_bytes() {
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
    }
    std::fclose(f);
    if (kib >= 0) return static_cast<int64_t>(kib) * 1024;
  }
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux: kilobytes
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int32_t n_vocab, int32_t n) {
  std::uniform_int_distribution<int32_t> dist(0, n_vocab - 1);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& t : v) t = dist(rng);
  return v;
}

GenerationConfig greedy(int32_t max_tokens) {
  GenerationConfig c;
  c.max_tokens = max_tokens;
  c.temperature = 0.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.ignore_eos = true;
  c.seed = 0;
  return c;
}

struct PpSample {
  double prefill_ms = 0;
  double ttft_ms = 0;
};

// N prompt tokens from an empty context, then one greedy sample (for TTFT).
Result<PpSample> run_pp(Model& model, const std::vector<int32_t>& tokens) {
  model.reset();
  GENIEX_ASSIGN_OR_RETURN(Generation g,
                          model.generate(std::span<const int32_t>(tokens), greedy(1)));
  return PpSample{g.timings.prompt_ms, g.timings.ttft_ms};
}

// Cuts the sequence back to all but the last of the `depth` tokens, untimed: a prompt of those
// tokens, nothing generated (after a reset it evaluates them). run_tg's call then reuses them
// whole. Reusing them straight from the longer sequence the previous call left works for a KV
// cache, but a recurrent state (LFM2's convolutions) cannot be rolled back: the cut would fall
// back to the last block snapshot and the timed call would prefill up to a block again.
Status cut_to_depth(Model& model, const std::vector<int32_t>& depth_tokens) {
  if (depth_tokens.size() < 2) return {};
  auto g = model.generate(std::span<const int32_t>(depth_tokens.data(), depth_tokens.size() - 1),
                          greedy(0));
  return g.ok() ? Status() : g.status();
}

// n forward passes of one token each after `depth` cached tokens (a 1-token prompt + n-1 steps);
// depth 0 starts from an empty context. The depth tokens are evaluated by the warm-up and kept
// in the cache across repetitions; cut_to_depth() runs before each call.
Result<double> run_tg(Model& model, std::vector<int32_t> depth_tokens, int32_t first_token,
                      int32_t n, bool timed = true) {
  if (depth_tokens.empty()) model.reset();
  depth_tokens.push_back(first_token);
  GENIEX_ASSIGN_OR_RETURN(Generation g,
                          model.generate(std::span<const int32_t>(depth_tokens), greedy(n)));
  if (g.timings.generated_tokens != n) {
    return Status(StatusCode::kInternal,
                  "tg generated " + std::to_string(g.timings.generated_tokens) + " tokens, not " +
                      std::to_string(n) +
                      " (stop: " + std::string(stop_reason_name(g.stop_reason)) + ")");
  }
  const auto depth = static_cast<int32_t>(depth_tokens.size()) - 1;
  // The cache reuses all but the last two prompt tokens: the depth minus one.
  if (timed && depth > 0 && g.timings.cached_tokens < depth - 1) {
    return Status(StatusCode::kInternal, "tg at depth " + std::to_string(depth) + " found only " +
                                             std::to_string(g.timings.cached_tokens) +
                                             " tokens cached (run the warm-up first)");
  }
  return g.timings.prompt_ms + g.timings.generation_ms;
}

// P concurrent tg runs from an empty context (one thread and sequence each), batched by the
// engine; returns the wall time until the last one finished.
Result<double> run_tg_parallel(Model& model, const std::vector<int32_t>& first_tokens, int32_t n) {
  model.reset();
  std::vector<Status> status(first_tokens.size(), Status());
  const auto t0 = std::chrono::steady_clock::now();
  // jthreads: those that started are joined even when starting the next one throws.
  std::vector<std::jthread> threads;
  for (size_t i = 0; i < first_tokens.size(); ++i) {
    auto run_one = [&, i] {
      auto g = model.generate(std::span<const int32_t>(&first_tokens[i], 1), greedy(n));
      if (!g.ok()) {
        status[i] = g.status();
      } else if (g->timings.generated_tokens != n) {
        status[i] = Status(StatusCode::kInternal, "tg generated " +
                                                      std::to_string(g->timings.generated_tokens) +
                                                      " tokens, not " + std::to_string(n));
      }
    };
    try {
      threads.emplace_back(run_one);
    } catch (const std::system_error& e) {
      return resource_exhausted("--parallel " + std::to_string(first_tokens.size()) +
                                ": the system refused a thread: " + e.what());
    }
  }
  for (auto& t : threads) t.join();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const Status& s : status) {
    if (!s.ok()) return s;
  }
  return ms;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

void print_table(const BenchOptions& o, const ModelInfo& info, double load_ms,
                 const std::optional<Series>& pp, const std::optional<Series>& tg,
                 const std::optional<Series>& ttft) {
  std::printf("model:     %s\n", info.path.c_str());
  std::printf("           %s%s%s, %.1f M params, %.1f MiB\n", info.architecture.c_str(),
              info.name.empty() ? "" : " / ", info.name.c_str(),
              static_cast<double>(info.n_params) / 1e6,
              static_cast<double>(info.file_bytes) / (1024.0 * 1024.0));
  std::printf("placement: %s\n", info.placement.c_str());
  std::printf("threads %d | ctx %d | batch %d | seed %u | load %.1f ms | %d reps after 1 warm-up\n",
              info.n_threads, info.n_ctx, o.batch, o.seed, load_ms, o.reps);
  if (o.depth > 0) {
    std::printf("(tg runs after %d cached tokens; kv %s; random fixed token ids)\n\n", o.depth,
                o.kv.type.c_str());
  } else {
    std::printf("(tg starts from an empty context, like llama-bench; random fixed token ids)\n\n");
  }

  // Header: test, unit, median, then one column per repetition.
  std::string head = "| test    | unit  |     median |";
  std::string rule = "|---------|-------|-----------:|";
  for (int32_t i = 0; i < o.reps; ++i) {
    head += fmt("     rep %-2.0f |", static_cast<double>(i + 1));
    rule += "-----------:|";
  }
  std::printf("%s\n%s\n", head.c_str(), rule.c_str());
  auto row = [&](const std::string& test, const char* unit, double med,
                 const std::vector<double>& samples) {
    std::string line = "| " + test;
    line.resize(std::max<size_t>(line.size(), 10), ' ');
    line += std::string("| ") + unit;
    line.resize(std::max<size_t>(line.size(), 18), ' ');
    line += "| " + fmt("%10.2f", med) + " |";
    for (double s : samples) line += " " + fmt("%10.2f", s) + " |";
    std::printf("%s\n", line.c_str());
  };
  if (pp) row("pp" + std::to_string(pp->n_tokens), "tok/s", pp->median_tok_s(), pp->tok_s());
  if (tg) {
    const std::string name = o.parallel > 1
                                 ? "tg" + std::to_string(o.n_gen) + "x" + std::to_string(o.parallel)
                                 : "tg" + std::to_string(tg->n_tokens);
    row(name, "tok/s", tg->median_tok_s(), tg->tok_s());
  }
  if (ttft) row("ttft" + std::to_string(ttft->n_tokens), "ms", ttft->median_ms(), ttft->ms);
  std::printf("\npeak RSS: %.1f MiB\n", static_cast<double>(peak_rss_bytes()) / (1024.0 * 1024.0));
}

// Time per stage per unit, boundary copies, and overlap (unit busy time / wall time: > 1 when
// units worked at once).
void print_profile(const char* test, const StageProfile& p) {
  if (p.stages.empty()) return;
  std::printf("\nprofile %s (summed over the timed repetitions):\n", test);
  std::printf("| stages | unit | runs | ms | ms/run | share | KiB in/run | KiB out/run |\n");
  std::printf("|---|---|--:|--:|--:|--:|--:|--:|\n");
  const double busy = p.busy_ms();
  for (const auto& x : p.stages) {
    const double runs = static_cast<double>(std::max<int64_t>(1, x.runs));
    std::printf("| %s | %s | %lld | %.1f | %.3f | %.0f%% | %.1f | %.1f |\n", x.stages.c_str(),
                x.device.c_str(), static_cast<long long>(x.runs), x.ms, x.ms / runs,
                busy > 0 ? 100.0 * x.ms / busy : 0.0,
                static_cast<double>(x.bytes_in) / 1024.0 / runs,
                static_cast<double>(x.bytes_out) / 1024.0 / runs);
  }
  std::printf("units busy %.1f ms over %.1f ms wall: overlap %.2f (1.00 = one unit at a time)\n",
              busy, p.wall_ms, p.wall_ms > 0 ? busy / p.wall_ms : 0.0);
}

// The --image test's samples, one per repetition.
struct ImageSeries {
  int64_t views = 0;          ///< views of one run (all images)
  int32_t prompt_tokens = 0;  ///< prompt of one run, image tokens included
  int32_t n_gen = 0;
  std::vector<double> encode_ms, preprocess_ms, prefill_ms, ttft_ms, tg_tok_s;
};

constexpr const char* kImagePromptText = "Describe this image.";

// One image run from an empty context: encode + prefill + n_gen greedy tokens.
Status run_image(Model& model, const std::vector<Image>& images, int32_t n_gen, ImageSeries* out) {
  model.reset();
  const ImageStats before = model.image_stats();
  GENIEX_ASSIGN_OR_RETURN(Generation g,
                          model.generate(kImagePromptText, images, greedy(std::max(1, n_gen))));
  const ImageStats after = model.image_stats();
  if (out == nullptr) return Status();
  // The encoder runs inside the generation, when its prefill reaches the image (its time is in
  // prompt_ms and ttft_ms); decoding and preprocessing come before the request starts.
  const double encode = after.encode_ms - before.encode_ms;
  const double prepare = after.prepare_ms - before.prepare_ms;
  out->views = after.views - before.views;
  out->prompt_tokens = g.timings.prompt_tokens;
  out->n_gen = n_gen;
  out->encode_ms.push_back(encode);
  out->preprocess_ms.push_back(prepare);
  out->prefill_ms.push_back(g.timings.prompt_ms - (encode - prepare));
  out->ttft_ms.push_back(prepare + g.timings.ttft_ms);
  if (n_gen > 0) out->tg_tok_s.push_back(g.timings.generation_tokens_per_second());
  return Status();
}

std::vector<double> scaled(const std::vector<double>& v, double by) {
  std::vector<double> r;
  r.reserve(v.size());
  for (double x : v) r.push_back(by > 0 ? x / by : 0.0);
  return r;
}

void print_image_table(const BenchOptions& o, const ImageSeries& im) {
  const auto n_images = static_cast<double>(o.images.size());
  std::printf("\nimage test: %zu image%s, %lld view%s, %d prompt tokens (image tokens + \"%s\")\n",
              o.images.size(), o.images.size() == 1 ? "" : "s", static_cast<long long>(im.views),
              im.views == 1 ? "" : "s", im.prompt_tokens, kImagePromptText);
  for (const std::string& p : o.images) std::printf("  %s\n", p.c_str());
  std::printf(
      "(encode = decode + preprocess + vision encoder; ttft = encode + prefill + first "
      "token; from an empty context)\n\n");
  std::string head = "| test         | unit  |     median |";
  std::string rule = "|--------------|-------|-----------:|";
  for (int32_t i = 0; i < o.reps; ++i) {
    head += fmt("     rep %-2.0f |", static_cast<double>(i + 1));
    rule += "-----------:|";
  }
  std::printf("%s\n%s\n", head.c_str(), rule.c_str());
  auto row = [&](const std::string& test, const char* unit, const std::vector<double>& samples) {
    std::string line = "| " + test;
    line.resize(std::max<size_t>(line.size(), 15), ' ');
    line += std::string("| ") + unit;
    line.resize(std::max<size_t>(line.size(), 23), ' ');
    line += "| " + fmt("%10.2f", Series::median_of(samples)) + " |";
    for (double s : samples) line += " " + fmt("%10.2f", s) + " |";
    std::printf("%s\n", line.c_str());
  };
  row("encode/image", "ms", scaled(im.encode_ms, n_images));
  row("encode/view", "ms", scaled(im.encode_ms, static_cast<double>(im.views)));
  row("prefill", "ms", im.prefill_ms);
  row("ttft", "ms", im.ttft_ms);
  if (!im.tg_tok_s.empty()) row("tg" + std::to_string(im.n_gen), "tok/s", im.tg_tok_s);
}

Json image_json(const BenchOptions& o, const ImageSeries& im) {
  auto series = [](const std::vector<double>& v) {
    return Json{{"samples", v}, {"median", Series::median_of(v)}};
  };
  return Json{{"paths", o.images},
              {"images", o.images.size()},
              {"views", im.views},
              {"prompt_tokens", im.prompt_tokens},
              {"n_gen", im.n_gen},
              {"encode_ms", series(im.encode_ms)},
              {"encode_ms_per_image", series(scaled(im.encode_ms, double(o.images.size())))},
              {"encode_ms_per_view", series(scaled(im.encode_ms, double(im.views)))},
              {"preprocess_ms", series(im.preprocess_ms)},
              {"prefill_ms", series(im.prefill_ms)},
              {"ttft_ms", series(im.ttft_ms)},
              {"tg_tok_s", im.tg_tok_s.empty() ? Json(nullptr) : series(im.tg_tok_s)}};
}

Json series_json(const std::optional<Series>& s) {
  if (!s) return nullptr;
  return Json{{"n_tokens", s->n_tokens},
              {"samples_ms", s->ms},
              {"samples_tok_s", s->tok_s()},
              {"median_ms", s->median_ms()},
              {"median_tok_s", s->median_tok_s()}};
}

// The context the tests need, in 64 bits (each flag goes up to 2^31 - 1).
int64_t tokens_needed(const BenchOptions& o) {
  const int64_t p = o.n_prompt, n = o.n_gen, d = o.depth;
  return std::max({p + n, p + 1, d + n + 1});
}

int run_bench(const BenchOptions& o) {
  if (o.parallel > 1 && o.depth > 0) {
    std::fprintf(stderr, "geniex bench: --parallel runs tg from an empty context (no --depth)\n");
    return kExitUsage;
  }
  if (o.n_prompt == 0 && o.n_gen == 0) {
    std::fprintf(stderr, "geniex bench: nothing to do: -p and -n are both 0\n");
    return kExitUsage;
  }
  std::string path = o.model;
  if (path.empty()) {
    auto p = default_model_path();
    if (!p.ok()) return fail(p.status().message());
    path = *p;
  }
  auto device = Device::parse(o.device);
  if (!device.ok()) {
    std::fprintf(stderr, "geniex bench: %s\n", device.status().message().c_str());
    return kExitUsage;
  }
  // Like llama-bench: the context holds the prompt and the generated tokens (and at least one
  // more than either test needs). 64-bit: the flags go up to 2^31 - 1 each.
  const int64_t needed = tokens_needed(o);
  if (needed > INT32_MAX) {
    std::fprintf(stderr,
                 "geniex bench: the tests need a context of %lld tokens (-p %d, -n %d, -d %d); "
                 "a context holds at most %d\n",
                 static_cast<long long>(needed), o.n_prompt, o.n_gen, o.depth, INT32_MAX);
    return kExitUsage;
  }
  if (o.ctx > 0 && needed > o.ctx) {
    std::fprintf(stderr,
                 "geniex bench: the tests need a context of %lld tokens (-p %d, -n %d, -d %d) "
                 "but -c is %d\n",
                 static_cast<long long>(needed), o.n_prompt, o.n_gen, o.depth, o.ctx);
    return kExitUsage;
  }
  for (const std::string& p : o.images) {
    if (Status s = check_image_file(p); !s.ok()) return fail(s.message());
  }
  // The image test needs room for the image tokens, unknown before encoding: a generous
  // context unless -c says otherwise (capped at the model's own).
  const int64_t auto_ctx = o.images.empty() ? needed : std::min<int64_t>(needed + 8192, INT32_MAX);
  const auto ctx = static_cast<int32_t>(o.ctx > 0 ? o.ctx : auto_ctx);

  // The encoder loads only for the image test (or an explicit --mmproj).
  std::string mmproj;
  if (!o.images.empty() || !o.mmproj.empty()) {
    auto r = resolve_mmproj(path, o.mmproj, o.no_mmproj, "geniex bench");
    if (!r.ok()) {
      std::fprintf(stderr, "geniex bench: %s\n", r.status().message().c_str());
      return r.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitError;
    }
    mmproj = *r;
  }
  ModelBuilder b(path);
  if (!mmproj.empty()) b.with_mmproj(mmproj);
  b.with_device(*device).with_offload_layers(o.offload_layers).with_context_size(ctx);
  b.with_npu_config(o.npu_config);
  b.with_threads(o.threads).with_batch_size(o.batch);
  if (o.parallel > 1) b.with_max_sequences(o.parallel);
  if (Status s = apply_kv_flags(o.kv, b); !s.ok()) {
    std::fprintf(stderr, "geniex bench: %s\n", s.message().c_str());
    return kExitUsage;
  }
  auto cpu_tuning = parse_cpu_tuning(o.cpu_tuning);
  if (!cpu_tuning.ok()) {
    std::fprintf(stderr, "geniex bench: %s\n", cpu_tuning.status().message().c_str());
    return kExitUsage;
  }
  BackendTuning tuning;
  tuning.cpu = std::move(*cpu_tuning);
  tuning.opencl.device_filter = o.opencl_device;
  b.with_tuning(tuning);
  if (o.verbose) {
    b.with_log([](std::string_view line) {
      std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto model = b.build();
  if (!model.ok()) return fail(path + ": " + model.status().message());
  for (const std::string& w : model->info().warnings) {
    std::fprintf(stderr, "geniex bench: warning: %s\n", w.c_str());
  }
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const ModelInfo& info = model->info();
  if (info.n_vocab <= 0) return fail(path + ": the model has no vocabulary size");
  if (!o.images.empty() && info.mmproj_path.empty()) {
    return fail(no_mmproj_error(path, o.no_mmproj).message());
  }
  // The model's context caps -c: check before the token ids are allocated (4 bytes each).
  if (needed > info.n_ctx) {
    return fail(path + ": the tests need a context of " + std::to_string(needed) + " tokens (-p " +
                std::to_string(o.n_prompt) + ", -n " + std::to_string(o.n_gen) + ", -d " +
                std::to_string(o.depth) + ") but the model's context holds " +
                std::to_string(info.n_ctx));
  }

  std::mt19937 rng(o.seed);
  const std::vector<int32_t> pp_tokens = random_tokens(rng, info.n_vocab, o.n_prompt);
  const int32_t tg_first = random_tokens(rng, info.n_vocab, 1)[0];
  const std::vector<int32_t> depth_tokens = random_tokens(rng, info.n_vocab, o.depth);
  const std::vector<int32_t> par_tokens = random_tokens(rng, info.n_vocab, o.parallel);
  auto tg_once = [&](int32_t n, bool timed) -> Result<double> {
    if (o.parallel > 1) return run_tg_parallel(*model, par_tokens, n);
    return run_tg(*model, depth_tokens, tg_first, n, timed);
  };

  std::optional<Series> pp, tg, ttft;
  if (o.n_prompt > 0) {
    pp = Series{o.n_prompt, {}};
    ttft = Series{o.n_prompt, {}};
  }
  if (o.n_gen > 0) tg = Series{o.n_gen * o.parallel, {}};

  // Warm-up (untimed): page in the weights, size the buffers.
  if (pp) {
    auto w = run_pp(*model, pp_tokens);
    if (!w.ok()) return fail("pp warm-up: " + w.status().message());
  }
  // Before every tg call with a depth (-P has none): the depth's prefix, untimed.
  const auto cut = [&]() -> Status {
    return o.parallel > 1 ? Status() : cut_to_depth(*model, depth_tokens);
  };
  if (tg) {
    if (Status s = cut(); !s.ok()) return fail("tg warm-up: " + s.message());
    auto w = tg_once(std::min<int32_t>(o.n_gen, 4), false);
    if (!w.ok()) return fail("tg warm-up: " + w.status().message());
  }
  const bool progress = !o.json && isatty(STDERR_FILENO) != 0;
  StageProfile pp_prof, tg_prof;
  for (int32_t r = 0; r < o.reps; ++r) {
    if (pp) {
      model->reset_stage_timings();
      auto s = run_pp(*model, pp_tokens);
      if (!s.ok()) return fail("pp: " + s.status().message());
      pp->ms.push_back(s->prefill_ms);
      ttft->ms.push_back(s->ttft_ms);
      pp_prof.add(model->stage_timings(), s->prefill_ms);
    }
    if (tg) {
      if (Status s = cut(); !s.ok()) return fail("tg: " + s.message());
      model->reset_stage_timings();
      auto s = tg_once(o.n_gen, true);
      if (!s.ok()) return fail("tg: " + s.status().message());
      tg->ms.push_back(*s);
      tg_prof.add(model->stage_timings(), *s);
    }
    if (progress) std::fprintf(stderr, "\rgeniex bench: repetition %d/%d", r + 1, o.reps);
  }
  if (progress) std::fprintf(stderr, "\r%40s\r", "");

  std::optional<ImageSeries> image;
  if (!o.images.empty()) {
    std::vector<Image> images;
    for (const std::string& p : o.images) images.push_back(Image::from_file(p));
    if (Status s = run_image(*model, images, o.n_gen, nullptr); !s.ok()) {
      return fail("image warm-up: " + s.message());
    }
    image = ImageSeries{};
    for (int32_t r = 0; r < o.reps; ++r) {
      if (Status s = run_image(*model, images, o.n_gen, &*image); !s.ok()) {
        return fail("image: " + s.message());
      }
    }
  }

  if (o.json) {
    Json j;
    j["model"] = info.path;
    j["name"] = info.name;
    j["architecture"] = info.architecture;
    j["n_params"] = info.n_params;
    j["file_bytes"] = info.file_bytes;
    j["placement"] = info.placement;
    j["device"] = o.device;
    j["threads"] = info.n_threads;
    j["n_ctx"] = info.n_ctx;
    j["n_batch"] = o.batch;
    j["seed"] = o.seed;
    j["depth"] = o.depth;
    j["parallel"] = o.parallel;
    j["kv_type"] = o.kv.type;
    j["kv_budget"] = o.kv.budget;
    j["repetitions"] = o.reps;
    j["load_ms"] = load_ms;
    j["pp"] = series_json(pp);
    j["tg"] = series_json(tg);
    if (ttft) {
      j["ttft"] = Json{
          {"n_prompt", ttft->n_tokens}, {"samples_ms", ttft->ms}, {"median_ms", ttft->median_ms()}};
    } else {
      j["ttft"] = nullptr;
    }
    j["peak_rss_bytes"] = peak_rss_bytes();
    if (image) j["image"] = image_json(o, *image);
    if (o.profile) {
      auto prof = [](const StageProfile& p) {
        Json a = Json::array();
        for (const auto& x : p.stages) {
          a.push_back(Json{{"stages", x.stages},
                           {"device", x.device},
                           {"runs", x.runs},
                           {"ms", x.ms},
                           {"bytes_in", x.bytes_in},
                           {"bytes_out", x.bytes_out}});
        }
        return Json{{"stages", a}, {"wall_ms", p.wall_ms}, {"busy_ms", p.busy_ms()}};
      };
      const EngineStats es = model->engine_stats();
      j["profile"] = Json{{"pp", prof(pp_prof)},
                          {"tg", prof(tg_prof)},
                          {"boundary_bytes", es.boundary_bytes},
                          {"fallbacks", es.fallbacks}};
    }
    std::printf("%s\n", j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
  } else {
    print_table(o, info, load_ms, pp, tg, ttft);
    if (image) print_image_table(o, *image);
    if (o.profile) {
      print_profile("pp", pp_prof);
      print_profile("tg", tg_prof);
      const EngineStats es = model->engine_stats();
      std::printf(
          "\nboundary buffers (planned once per graph, reused): %.1f KiB | run-time "
          "fallbacks: %lld\n",
          static_cast<double>(es.boundary_bytes) / 1024.0, static_cast<long long>(es.fallbacks));
      std::printf("\n%s", model->explain_placement().c_str());
    }
  }
  return kExitOk;
}

}  // namespace

Command register_bench(CLI::App& parent) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* c = parent.add_subcommand(
      "bench",
      "Prefill (pp) and decode (tg) speed, TTFT and peak RSS, like llama-bench: one warm-up, "
      "then the median of the repetitions. tg starts from an empty context.");
  c->add_option("-m,--model", o->model, "GGUF model (default: Gemma 3 270M from scripts/setup.sh)");
  add_mmproj_flags(c, o->mmproj, o->no_mmproj);
  c->add_option("--image", o->images,
                "add an image test with this image (repeat for several in one prompt): encode "
                "time per image and per view, prefill, TTFT and decode with the image")
      ->allow_extra_args(false);
  add_count_option(c, "-t,--threads", o->threads, 0, ModelBuilder::kMaxThreads,
                   "threads (0 = all cores)");
  add_count_option(c, "-p,--n-prompt", o->n_prompt, 0, INT32_MAX,
                   "prompt tokens of the pp test (0 = skip it)");
  add_count_option(c, "-n,--n-gen", o->n_gen, 0, INT32_MAX,
                   "generated tokens of the tg test (0 = skip it)");
  add_count_option(c, "-r,--reps", o->reps, 1, INT32_MAX, "timed repetitions of each test (>= 1)");
  c->add_option("--device", o->device, "auto, cpu, gpu or npu")->capture_default_str();
  add_offload_option(c, o->offload_layers);
  add_npu_config_option(c, o->npu_config);
  add_count_option(c, "-c,--ctx,--ctx-size", o->ctx, 0, INT32_MAX,
                   "context size (0 = n_prompt + n_gen)");
  add_count_option(c, "-b,--batch,--batch-size", o->batch, 1, INT32_MAX, "prompt tokens per step");
  c->add_option("--seed", o->seed, "seed of the random token ids")->capture_default_str();
  add_count_option(c, "-d,--depth", o->depth, 0, INT32_MAX,
                   "tokens already in the context when tg starts (llama-bench -d; 0 = empty)");
  add_count_option(c, "-P,--parallel", o->parallel, 1, 256,
                   "tg: this many generations at once, batched into one forward pass per step "
                   "(aggregate tok/s)");
  add_kv_flags(c, o->kv);
  c->add_option("--cpu-tuning", o->cpu_tuning,
                "CPU kernel tuning for A/B runs, key=value,...: isa=scalar|sse4|avx2|..., "
                "repack=default|none|all, huge_pages=0|1, prefetch=BYTES, streams=N");
  c->add_option("--opencl-device", o->opencl_device,
                "only OpenCL devices whose name, vendor or platform contains this (also admits "
                "non-GPU devices such as PoCL's 'pthread' under --device npu)");
  c->add_flag("--json", o->json, "print one JSON object with every sample");
  c->add_flag("-v,--verbose", o->verbose, "log placement decisions to stderr");
  c->add_flag("--profile", o->profile,
              "time per placement stage per unit, boundary copies and overlap, then the "
              "placement table");
  return {c, [o] { return run_bench(*o); }};
}

}  // namespace geniex::cli
