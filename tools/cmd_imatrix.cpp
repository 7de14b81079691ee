#include "cmd_imatrix.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
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
  std::string ranges;
};

// The percentiles written for every tensor (of the values, and of their magnitudes).
constexpr double kPercentiles[] = {0.1, 1.0, 50.0, 99.0, 99.9};
constexpr double kAbsPercentiles[] = {99.0, 99.9, 99.99};

std::string pct_key(const char* prefix, double p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%g", prefix, p);
  return buf;
}

Status write_ranges(const ImatrixFlags& f, const quantize::ImatrixStats& s) {
  nlohmann::ordered_json j;
  j["format"] = "geniex.activation_ranges";
  j["version"] = 1;
  j["model"] = f.model;
  j["dataset"] = f.text;
  j["chunks"] = s.chunks;
  j["chunk_size"] = s.chunk_size;
  j["sample_limit"] = quantize::kRangeSample;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const auto& [name, r] : s.ranges) {
    nlohmann::ordered_json t;
    t["tokens"] = s.counts.at(name);
    t["values"] = r.n;
    t["exact"] = r.n <= quantize::kRangeSample;
    t["min"] = r.min;
    t["max"] = r.max;
    t["mean_square"] = r.n > 0 ? r.sum_sq / static_cast<double>(r.n) : 0.0;
    for (double p : kPercentiles) t[pct_key("p", p)] = quantize::range_percentile(r, p, false);
    for (double p : kAbsPercentiles) {
      t[pct_key("abs_p", p)] = quantize::range_percentile(r, p, true);
    }
    tensors[name] = std::move(t);
  }
  j["tensors"] = std::move(tensors);
  const std::string tmp = f.ranges + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << j.dump(1) << "\n";
    if (!out.good()) {
      std::remove(tmp.c_str());
      return io_error("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), f.ranges.c_str()) != 0) {
    std::remove(tmp.c_str());
    return io_error("cannot rename " + tmp + " to " + f.ranges);
  }
  return {};
}

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
  opts.ranges = !f.ranges.empty();
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
  if (!f.ranges.empty()) {
    st = write_ranges(f, *stats);
    if (!st.ok()) return fail(st.message());
  }
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
  c->add_option("--activation-ranges", f->ranges,
                "also write each weight's input activation range (min, max, percentiles) as "
                "JSON here, for static activation quantization");
  return {c, [f] { return run_imatrix(*f); }};
}

}  // namespace geniex::cli
