// `geniex perplexity`: perplexity of a text, chunked and scored as llama-perplexity does, and
// KL divergence against a base file in llama.cpp's format (written with
// --kl-divergence-base, compared with --kl-divergence; files from either tool work in both).
#include "cmd_perplexity.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "default_model.h"
#include "eval/kld_base_file.h"
#include "eval/perplexity_stats.h"
#include "geniex/geniex.hpp"
#include "kv_flags.h"
#include "model_flags.h"
#include "number_flags.h"
#include "text_input.h"

namespace geniex::cli {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct PplOptions {
  std::string model;
  std::string file;
  int32_t ctx = 512;
  int32_t batch = 512;
  int32_t chunks = -1;
  int32_t threads = 0;
  std::string device = "cpu";
  /// --npu-config: the NPU plugins' config string
  std::string npu_config;
  int32_t offload_layers = -1;  ///< --offload-layers
  KvOptions kv;
  std::string cpu_tuning;  ///< --cpu-tuning (parse_cpu_tuning)
  std::string kld_base;
  bool kld = false;
  bool json = false;
  bool verbose = false;
};

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex perplexity: %s\n", what.c_str());
  return kExitError;
}

// Runs fn(i) for i in [0, n) on up to `threads` threads, contiguous ranges each.
template <typename Fn>
void parallel_rows(int64_t n, int32_t threads, const Fn& fn) {
  const int64_t t = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  std::vector<std::thread> pool;
  for (int64_t w = 1; w < t; ++w) {
    pool.emplace_back([&, w] {
      for (int64_t i = n * w / t; i < n * (w + 1) / t; ++i) fn(i);
    });
  }
  for (int64_t i = 0; i < n / t; ++i) fn(i);
  for (auto& th : pool) th.join();
}

// Progress on stderr, only where a person watches it.
class Progress {
 public:
  Progress(bool enabled, int32_t total) : on_(enabled), total_(total), t0_(Clock::now()) {}
  void update(int32_t done) const {
    if (!on_) return;
    const double s = std::chrono::duration<double>(Clock::now() - t0_).count();
    const double eta = done > 0 ? s / done * (total_ - done) : 0.0;
    constexpr int kWidth = 30;
    const int fill = total_ > 0 ? done * kWidth / total_ : kWidth;
    std::fprintf(stderr, "\r[%s%s] chunk %d/%d, %.0f s, ETA %.0f s ",
                 std::string(static_cast<size_t>(fill), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - fill), '.').c_str(), done, total_, s,
                 eta);
    if (done == total_) std::fputc('\n', stderr);
  }

 private:
  bool on_;
  int32_t total_;
  Clock::time_point t0_;
};

Result<Model> load_model(const PplOptions& o, int32_t n_ctx) {
  std::string path = o.model;
  if (path.empty()) {
    GENIEX_ASSIGN_OR_RETURN(path, default_model_path());
  }
  GENIEX_ASSIGN_OR_RETURN(Device device, Device::parse(o.device));
  ModelBuilder b(path);
  b.with_npu_config(o.npu_config);
  b.with_device(device)
      .with_offload_layers(o.offload_layers)
      .with_context_size(n_ctx)
      .with_threads(o.threads)
      .with_batch_size(std::min(o.batch, n_ctx))
      .with_max_sequences(1);
  GENIEX_TRY(apply_kv_flags(o.kv, b));
  GENIEX_ASSIGN_OR_RETURN(CpuTuning cpu_tuning, parse_cpu_tuning(o.cpu_tuning));
  BackendTuning tuning;
  tuning.cpu = std::move(cpu_tuning);
  b.with_tuning(tuning);
  if (o.verbose) {
    b.with_log([](std::string_view line) {
      std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
    });
  }
  auto m = b.build();
  if (!m.ok()) return Status(m.status().code(), path + ": " + m.status().message());
  for (const std::string& w : m->info().warnings) {
    std::fprintf(stderr, "geniex perplexity: warning: %s\n", w.c_str());
  }
  if (m->info().n_ctx < n_ctx) {
    return invalid_argument("the model's training context is " + std::to_string(m->info().n_ctx) +
                            " tokens, less than -c " + std::to_string(n_ctx));
  }
  return m;
}

// The logits of the scored positions of one chunk (BOS put in front where the model adds one,
// as llama-perplexity does): scored_per_chunk(n_ctx) rows.
Result<std::vector<float>> chunk_logits(Model& model, std::span<const int32_t> chunk) {
  std::vector<int32_t> toks(chunk.begin(), chunk.end());
  if (model.info().add_bos) toks[0] = model.info().bos_token;
  const auto first = static_cast<int32_t>(toks.size() / 2);
  return model.logits(toks, first);
}

Json estimate_json(const eval::Estimate& e) { return Json{{"value", e.value}, {"error", e.error}}; }

Json quantiles_json(const std::vector<eval::Quantile>& q) {
  Json j = Json::object();
  for (const auto& x : q) j[std::string(x.key)] = x.value;
  return j;
}

// llama.cpp's row label of a quantile: "Maximum", "99.9%  ", " 5.0%  ", "Median ", ...
std::string quantile_label(const eval::Quantile& q) {
  if (q.key == "max") return "Maximum";
  if (q.key == "min") return "Minimum";
  if (q.key == "median") return "Median ";
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%4.1f%%  ", 100.0 * q.fraction);
  return buf;
}

Json kld_json(const eval::KldReport& r) {
  return Json{{"positions", r.count},
              {"ppl", estimate_json(r.ppl)},
              {"ppl_base", estimate_json(r.ppl_base)},
              {"ln_ppl_correlation", r.ln_ppl_correlation},
              {"ln_ppl_ratio", estimate_json(r.ln_ppl_ratio)},
              {"ppl_ratio", estimate_json(r.ppl_ratio)},
              {"ppl_diff", estimate_json(r.ppl_diff)},
              {"kld", estimate_json(r.kld)},
              {"kld_percentiles", quantiles_json(r.kld_quantiles)},
              {"delta_p", estimate_json(r.delta_p)},
              {"delta_p_percentiles", quantiles_json(r.delta_p_quantiles)},
              {"delta_p_rms", estimate_json(r.delta_p_rms)},
              {"same_top_p", estimate_json(r.same_top)}};
}

void print_kld_report(const eval::KldReport& r) {
  std::printf("\n====== Perplexity statistics ======\n");
  std::printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", r.ppl.value, r.ppl.error);
  std::printf("Mean PPL(base)                : %10.6f ± %10.6f\n", r.ppl_base.value,
              r.ppl_base.error);
  std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * r.ln_ppl_correlation);
  std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", r.ln_ppl_ratio.value,
              r.ln_ppl_ratio.error);
  std::printf("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", r.ppl_ratio.value,
              r.ppl_ratio.error);
  std::printf("Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", r.ppl_diff.value,
              r.ppl_diff.error);
  std::printf("\n====== KL divergence statistics ======\n");
  std::printf("Mean    KLD: %10.6f ± %10.6f\n", r.kld.value, r.kld.error);
  for (const auto& q : r.kld_quantiles) {
    std::printf("%s KLD: %10.6f\n", quantile_label(q).c_str(), q.value);
  }
  std::printf("\n====== Token probability statistics ======\n");
  std::printf("Mean    Δp: %6.3f ± %5.3f %%\n", 100.0 * r.delta_p.value, 100.0 * r.delta_p.error);
  for (const auto& q : r.delta_p_quantiles) {
    std::printf("%s Δp: %6.3f%%\n", quantile_label(q).c_str(), 100.0 * q.value);
  }
  std::printf("RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * r.delta_p_rms.value,
              100.0 * r.delta_p_rms.error);
  std::printf("Same top p: %6.3f ± %5.3f %%\n", 100.0 * r.same_top.value, 100.0 * r.same_top.error);
}

// Perplexity of -f's text; with --kl-divergence-base, also writes the base file.
int run_perplexity(const PplOptions& o, Model& model, const std::vector<int32_t>& tokens,
                   int32_t n_chunk, bool progress, Json& out) {
  const int32_t n_ctx = o.ctx;
  const int32_t n_vocab = model.info().n_vocab;
  const int64_t n_scored = eval::scored_per_chunk(n_ctx);
  const auto words = static_cast<size_t>(eval::row_words(n_vocab));
  std::unique_ptr<eval::KldBaseWriter> writer;
  if (!o.kld_base.empty()) {
    auto w = eval::KldBaseWriter::create(
        o.kld_base, n_ctx, n_vocab, n_chunk,
        std::span<const int32_t>(tokens).first(static_cast<size_t>(n_ctx) * n_chunk));
    if (!w.ok()) return fail(w.status().message());
    writer = std::move(w).value();
  }
  eval::PerplexityStats stats;
  std::vector<double> nll(static_cast<size_t>(n_scored));
  std::vector<uint16_t> rows(writer ? words * static_cast<size_t>(n_scored) : 0);
  Json chunks = Json::array();
  const Progress bar(progress, n_chunk);
  for (int32_t c = 0; c < n_chunk; ++c) {
    if (g_stop.load()) return fail("interrupted; nothing written");
    const auto chunk =
        std::span<const int32_t>(tokens).subspan(static_cast<size_t>(c) * n_ctx, n_ctx);
    auto logits = chunk_logits(model, chunk);
    if (!logits.ok()) return fail(logits.status().message());
    const int32_t first = n_ctx / 2;
    parallel_rows(n_scored, model.info().n_threads, [&](int64_t i) {
      const auto row = std::span<const float>(*logits).subspan(static_cast<size_t>(i) * n_vocab,
                                                               static_cast<size_t>(n_vocab));
      const int32_t next = chunk[static_cast<size_t>(first + i + 1)];
      nll[static_cast<size_t>(i)] =
          writer ? eval::encode_log_probs(row, next, std::span(rows).subspan(i * words, words))
                 : eval::token_nll(row, next);
    });
    for (double v : nll) stats.add(v);
    if (writer) {
      Status s = writer->append(rows);
      if (!s.ok()) return fail(s.message());
    }
    const eval::Estimate ppl = stats.perplexity();
    chunks.push_back(Json{{"chunk", c + 1}, {"ppl", ppl.value}});
    if (!o.json) {
      std::printf("[%d]%.4f,", c + 1, ppl.value);
      std::fflush(stdout);
    }
    bar.update(c + 1);
  }
  if (writer) {
    Status s = writer->finish();
    if (!s.ok()) return fail(s.message());
  }
  const eval::Estimate ppl = stats.perplexity();
  if (!o.json) {
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl.value, ppl.error);
    if (writer) std::printf("KL-divergence base written to %s\n", o.kld_base.c_str());
  }
  out["mode"] = writer ? "kl-divergence-base" : "perplexity";
  out["ppl"] = estimate_json(ppl);
  out["positions"] = stats.count();
  out["chunks"] = std::move(chunks);
  if (writer) out["kl_divergence_base"] = o.kld_base;
  return kExitOk;
}

// Compares the model with a base file, chunk by chunk.
int run_kld(const PplOptions& o, Model& model, const eval::KldBaseReader& base, int32_t n_chunk,
            bool progress, Json& out) {
  const int32_t n_ctx = base.n_ctx();
  const int32_t n_vocab = base.n_vocab();
  const int64_t n_scored = eval::scored_per_chunk(n_ctx);
  eval::KldStats stats;
  std::vector<eval::KldPoint> points(static_cast<size_t>(n_scored));
  Json chunks = Json::array();
  const Progress bar(progress, n_chunk);
  if (!o.json) {
    std::printf(
        "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence"
        "              Δp RMS            Same top p\n");
  }
  for (int32_t c = 0; c < n_chunk; ++c) {
    if (g_stop.load()) return fail("interrupted");
    const auto chunk = base.chunk_tokens(c);
    auto logits = chunk_logits(model, chunk);
    if (!logits.ok()) return fail(logits.status().message());
    const int32_t first = n_ctx / 2;
    parallel_rows(n_scored, model.info().n_threads, [&](int64_t i) {
      const auto row = std::span<const float>(*logits).subspan(static_cast<size_t>(i) * n_vocab,
                                                               static_cast<size_t>(n_vocab));
      points[static_cast<size_t>(i)] =
          eval::kld_point(row, base.row(c, i), chunk[static_cast<size_t>(first + i + 1)]);
    });
    for (const auto& p : points) stats.add(p);
    const eval::KldReport r = stats.running();
    chunks.push_back(Json{{"chunk", c + 1},
                          {"ppl", r.ppl.value},
                          {"ln_ppl_ratio", r.ln_ppl_ratio.value},
                          {"kld", r.kld.value},
                          {"delta_p_rms", r.delta_p_rms.value},
                          {"same_top_p", r.same_top.value}});
    if (!o.json) {
      std::printf(
          "%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f ± %6.3f %%"
          "    %6.3f ± %6.3f %%\n",
          c + 1, r.ppl.value, r.ppl.error, r.ln_ppl_ratio.value, r.ln_ppl_ratio.error, r.kld.value,
          r.kld.error, 100.0 * r.delta_p_rms.value, 100.0 * r.delta_p_rms.error,
          100.0 * r.same_top.value, 100.0 * r.same_top.error);
      std::fflush(stdout);
    }
    bar.update(c + 1);
  }
  const eval::KldReport r = stats.full();
  if (!o.json) print_kld_report(r);
  out["mode"] = "kl-divergence";
  out["kl_divergence_base"] = o.kld_base;
  out["positions"] = r.count;
  out["kl_divergence"] = kld_json(r);
  out["chunks"] = std::move(chunks);
  return kExitOk;
}

int run(const PplOptions& o) {
  if (o.kld && o.kld_base.empty()) {
    std::fprintf(stderr, "geniex perplexity: --kl-divergence needs --kl-divergence-base FILE\n");
    return kExitUsage;
  }
  if (!o.kld && o.file.empty()) {
    std::fprintf(stderr, "geniex perplexity: give the text with -f FILE\n");
    return kExitUsage;
  }
  if (o.ctx < 8) return fail("-c must be at least 8 tokens, got " + std::to_string(o.ctx));
  if (o.batch < 1) return fail("-b must be at least 1, got " + std::to_string(o.batch));

  std::optional<eval::KldBaseReader> base;
  std::string text;
  int32_t n_ctx = o.ctx;
  if (o.kld) {
    auto r = eval::KldBaseReader::open(o.kld_base);
    if (!r.ok()) return fail(r.status().message());
    base.emplace(std::move(r).value());
    n_ctx = base->n_ctx();  // the base file's chunking decides, as in llama.cpp
  } else {
    auto t = read_text_file(o.file);
    if (!t.ok()) return fail(t.status().message());
    text = std::move(t).value();
  }

  auto model = load_model(o, n_ctx);
  if (!model.ok()) return fail(model.status().message());
  const ModelInfo& info = model->info();

  const bool progress = !o.json && ::isatty(STDERR_FILENO) != 0;
  Json out;
  out["model"] = info.path;
  out["n_ctx"] = n_ctx;
  out["n_batch"] = std::min(o.batch, n_ctx);
  out["n_vocab"] = info.n_vocab;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const auto t0 = Clock::now();
  int rc = kExitOk;
  int32_t n_chunk = 0;
  if (base) {
    if (base->n_vocab() != info.n_vocab) {
      return fail("the base file's vocabulary has " + std::to_string(base->n_vocab()) +
                  " tokens, the model's " + std::to_string(info.n_vocab) +
                  ": it was made with another model");
    }
    n_chunk = o.chunks > 0 ? std::min(o.chunks, base->n_chunk()) : base->n_chunk();
    out["n_chunks"] = n_chunk;
    out["tokens"] = static_cast<int64_t>(base->n_chunk()) * n_ctx;
    rc = run_kld(o, *model, *base, n_chunk, progress, out);
  } else {
    auto tokens = model->tokenize(text, /*add_special=*/true, /*parse_special=*/false);
    if (!tokens.ok()) return fail(tokens.status().message());
    if (static_cast<int64_t>(tokens->size()) < 2LL * n_ctx) {
      return fail("the text tokenizes to " + std::to_string(tokens->size()) + " tokens; -c " +
                  std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx) +
                  " (two chunks)");
    }
    const auto n_max = static_cast<int32_t>(tokens->size() / static_cast<size_t>(n_ctx));
    n_chunk = o.chunks > 0 ? std::min(o.chunks, n_max) : n_max;
    out["n_chunks"] = n_chunk;
    out["tokens"] = tokens->size();
    if (!o.json) {
      std::fprintf(stderr, "perplexity: %zu tokens, %d chunks of %d, batch %d, %s\n",
                   tokens->size(), n_chunk, n_ctx, std::min(o.batch, n_ctx),
                   info.placement.c_str());
    }
    rc = run_perplexity(o, *model, *tokens, n_chunk, progress, out);
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (rc != kExitOk) return rc;
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  out["seconds"] = seconds;
  out["tokens_per_second"] = seconds > 0 ? static_cast<double>(n_chunk) * n_ctx / seconds : 0.0;
  if (o.json) std::cout << out.dump(2) << "\n";
  return kExitOk;
}

}  // namespace

Command register_perplexity(CLI::App& parent) {
  auto opts = std::make_shared<PplOptions>();
  CLI::App* c = parent.add_subcommand(
      "perplexity",
      "perplexity of a text (llama-perplexity's chunking) and KL divergence against a base file "
      "in llama.cpp's format");
  c->add_option("-m,--model", opts->model, "GGUF model (default: the setup's Gemma 3 270M)");
  c->add_option("-f,--file", opts->file, "text to score");
  add_count_option(c, "-c,--ctx,--ctx-size", opts->ctx, 8, INT32_MAX,
                   "tokens per chunk (the second half of each is scored)");
  add_count_option(c, "-b,--batch,--batch-size", opts->batch, 1, INT32_MAX,
                   "prompt tokens per step");
  add_count_option(c, "--chunks", opts->chunks, -1, INT32_MAX,
                   "chunks to score at most (-1 = all)");
  add_count_option(c, "-t,--threads", opts->threads, 0, ModelBuilder::kMaxThreads,
                   "threads (0 = all cores)");
  c->add_option("--device", opts->device, "auto, cpu, gpu or npu")->capture_default_str();
  add_npu_config_option(c, opts->npu_config);
  add_offload_option(c, opts->offload_layers);
  add_kv_flags(c, opts->kv);
  c->add_option("--kl-divergence-base", opts->kld_base,
                "base file of log-probabilities: written from -f's text, or read with "
                "--kl-divergence (llama-perplexity's format)");
  c->add_flag("--kl-divergence", opts->kld,
              "compare with --kl-divergence-base (its tokens and chunking; -f not needed)");
  c->add_option("--cpu-tuning", opts->cpu_tuning,
                "CPU kernel tuning for A/B runs, key=value,...: isa=scalar|sse4|avx2|..., "
                "repack=default|none|all, huge_pages=0|1, prefetch=BYTES, streams=N");
  c->add_flag("--json", opts->json, "print one JSON object instead of the text report");
  c->add_flag("-v,--verbose", opts->verbose, "log placement decisions to stderr");
  return {c, [opts] { return run(*opts); }};
}

}  // namespace geniex::cli
