#include "cmd_quantize.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "number_flags.h"
#include "quantize/quantize_model.h"

namespace geniex::cli {
namespace {

struct QuantizeFlags {
  std::string input;
  std::string output;
  std::string type;
  std::string imatrix;
  int32_t threads = 0;
  bool pure = false;
  bool leave_output = false;
  std::string output_type;
  std::string token_embd_type;
};

std::atomic<bool> g_stop{false};
extern "C" void quantize_stop_signal(int) { g_stop.store(true); }

double mib(uint64_t b) { return static_cast<double>(b) / 1024.0 / 1024.0; }

int run_quantize(const QuantizeFlags& f) {
  auto ft = quantize::parse_file_type(f.type);
  if (!ft.ok()) {
    std::fprintf(stderr, "geniex quantize: %s\n", ft.status().message().c_str());
    return kExitUsage;
  }
  quantize::QuantizeOptions opts;
  opts.file_type = *ft;
  opts.threads = f.threads;
  opts.imatrix_path = f.imatrix;
  opts.policy.pure = f.pure;
  opts.policy.quantize_output = !f.leave_output;
  if (!f.output_type.empty()) {
    auto t = quantize::parse_tensor_type(f.output_type);
    if (!t.ok()) {
      std::fprintf(stderr, "geniex quantize: --output-tensor-type: %s\n",
                   t.status().message().c_str());
      return kExitUsage;
    }
    opts.policy.output_type = *t;
  }
  if (!f.token_embd_type.empty()) {
    auto t = quantize::parse_tensor_type(f.token_embd_type);
    if (!t.ok()) {
      std::fprintf(stderr, "geniex quantize: --token-embedding-type: %s\n",
                   t.status().message().c_str());
      return kExitUsage;
    }
    opts.policy.token_embd_type = *t;
  }
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  if (tty) {
    opts.on_tensor = [](size_t i, size_t n, const std::string& name, GgmlType from, GgmlType to) {
      const int width = 30;
      const auto done = static_cast<int>(static_cast<double>(i) * width / static_cast<double>(n));
      std::fprintf(stderr, "\r\033[K[%s%s] %4zu/%zu %-36s %s -> %s",
                   std::string(static_cast<size_t>(done), '#').c_str(),
                   std::string(static_cast<size_t>(width - done), '.').c_str(), i + 1, n,
                   name.c_str(), std::string(ggml_type_name(from)).c_str(),
                   std::string(ggml_type_name(to)).c_str());
      std::fflush(stderr);
    };
  }
  opts.cancel = &g_stop;
  std::signal(SIGINT, quantize_stop_signal);
  std::signal(SIGTERM, quantize_stop_signal);
  const auto start = std::chrono::steady_clock::now();
  auto r = quantize::quantize_model(f.input, f.output, opts);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (tty) std::fputs("\r\033[K", stderr);
  if (!r.ok()) {
    std::fprintf(stderr, "geniex quantize: %s\n", r.status().message().c_str());
    return kExitError;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto n = static_cast<double>(r->n_elements);
  std::printf("%s -> %s as %s: %zu tensors (%zu quantized) with %d threads\n", f.input.c_str(),
              f.output.c_str(), std::string(ft->name).c_str(), r->n_tensors, r->n_quantized,
              r->threads);
  if (r->imatrix_entries > 0) {
    std::printf("importance matrix: %zu entries from %s\n", r->imatrix_entries, f.imatrix.c_str());
  }
  std::printf("model size  = %8.2f MiB (%.2f BPW)\n", mib(r->size_in),
              static_cast<double>(r->size_in) * 8.0 / n);
  std::printf("quant size  = %8.2f MiB (%.2f BPW)\n", mib(r->size_out),
              static_cast<double>(r->size_out) * 8.0 / n);
  if (r->n_fallback > 0) {
    std::printf("%zu of %zu tensor(s) required fallback quantization\n", r->n_fallback,
                r->n_tensors);
  }
  std::printf("quantize time = %.2f s\n", secs);
  return kExitOk;
}

}  // namespace

Command register_quantize(CLI::App& parent) {
  auto f = std::make_shared<QuantizeFlags>();
  CLI::App* c = parent.add_subcommand(
      "quantize", "quantize a GGUF model (F32/F16/BF16) to another type, as llama-quantize does");
  c->add_option("input", f->input, "source GGUF (F32, F16 or BF16 weights)")->required();
  c->add_option("output", f->output, "GGUF to write (atomically: temp file + rename)")->required();
  c->add_option("type", f->type,
                "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, "
                "Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS, F16, BF16, F32")
      ->required();
  c->add_option("--imatrix", f->imatrix,
                "importance matrix (llama-imatrix's GGUF or legacy .dat) for the weighted "
                "quantizers");
  add_count_option(c, "-t,--threads", f->threads, 0, 1024, "threads (0 = the CPUs available)");
  c->add_flag("--pure", f->pure,
              "every quantizable tensor gets TYPE (no _S/_M/_L mixture, no output bump)");
  c->add_option("--output-tensor-type", f->output_type, "type for output.weight (e.g. q8_0)");
  c->add_option("--token-embedding-type", f->token_embd_type,
                "type for token_embd.weight (e.g. q8_0)");
  c->add_flag("--leave-output-tensor", f->leave_output, "keep output.weight as it is");
  return {c, [f] { return run_quantize(*f); }};
}

}  // namespace geniex::cli
