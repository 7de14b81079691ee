#include "cmd_imatrix.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "gguf/gguf_reader.h"
#include "number_flags.h"
#include "quantize/imatrix_collect.h"
#include "tokenizer/tokenizer.h"

namespace geniex::cli {
namespace {

struct ImatrixFlags {
  std::string model;
  std::string text;
  std::string output = "imatrix.gguf";
  int32_t ctx = 512;
  int32_t chunks = -1;
};

int fail(const std::string& why) {
  std::fprintf(stderr, "geniex imatrix: %s\n", why.c_str());
  return kExitError;
}

int run_imatrix(const ImatrixFlags& f) {
  std::ifstream in(f.text, std::ios::binary);
  if (!in) return fail("cannot read " + f.text);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto file = gguf::GgufFile::open(f.model);
  if (!file.ok()) return fail(file.status().message());
  auto tok = tokenizer::Tokenizer::from_gguf(*file);
  if (!tok.ok()) return fail(tok.status().message());
  auto ids = (*tok)->encode(text);
  if (!ids.ok()) return fail(ids.status().message());
  quantize::ImatrixOptions opts;
  opts.n_ctx = f.ctx;
  opts.n_chunks = f.chunks;
  opts.add_bos = (*tok)->add_bos();
  opts.bos = (*tok)->bos();
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  opts.on_chunk = [tty](int32_t c, int32_t n) {
    if (tty) std::fprintf(stderr, "\r\033[Kchunk %d/%d", c + 1, n);
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = quantize::collect_imatrix(*file, *ids, opts);
  if (tty) std::fputs("\r\033[K", stderr);
  if (!stats.ok()) return fail(stats.status().message());
  Status st = quantize::write_imatrix(f.output, *stats, f.text);
  if (!st.ok()) return fail(st.message());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %zu entries from %d chunks of %d tokens (%zu tokens in %s) in %.1f s\n",
              f.output.c_str(), stats->sums.size(), stats->chunks, stats->chunk_size, ids->size(),
              f.text.c_str(), secs);
  return kExitOk;
}

}  // namespace

Command register_imatrix(CLI::App& parent) {
  auto f = std::make_shared<ImatrixFlags>();
  CLI::App* c = parent.add_subcommand(
      "imatrix", "compute an importance matrix for quantize --imatrix (llama-imatrix's format)");
  c->add_option("-m,--model", f->model, "GGUF model (F32/F16/BF16 or quantized)")->required();
  c->add_option("-f,--file", f->text, "calibration text")->required();
  c->add_option("-o,--output", f->output, "imatrix GGUF to write")->capture_default_str();
  add_count_option(c, "-c,--ctx-size", f->ctx, 16, 1 << 20, "tokens per chunk");
  add_count_option(c, "--chunks", f->chunks, -1, 1 << 30, "chunks to process (-1 = all)");
  return {c, [f] { return run_imatrix(*f); }};
}

}  // namespace geniex::cli
