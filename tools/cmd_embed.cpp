#include "cmd_embed.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "default_model.h"
#include "geniex/geniex.hpp"
#include "text_input.h"

namespace geniex::cli {
namespace {

using Json = nlohmann::ordered_json;

struct EmbedOptions {
  std::string model;
  std::vector<std::string> texts;
  std::string file;
  std::string pooling = "model";
  bool no_normalize = false;
  bool json = false;
  int32_t dimensions = 0;
  int32_t threads = 0;
  int32_t ctx = 0;
  int32_t batch = 512;
};

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex: %s\n", what.c_str());
  return kExitError;
}

// One text per line of `text` (a final newline ends the last line; \r\n counts as one).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    at = nl + 1;
  }
  return out;
}

int run_embed(const EmbedOptions& o) {
  auto pooling = parse_pooling(o.pooling);
  if (!pooling.ok()) return fail(pooling.status().message());
  std::vector<std::string> texts = o.texts;
  if (texts.empty()) {
    auto in = read_text_input("", o.file);
    if (!in.ok()) return fail(in.status().message());
    texts = lines_of(*in);
  }
  if (texts.empty()) return fail("no text to embed: give TEXT... or -f FILE (one text per line)");
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].empty()) return fail("text " + std::to_string(i + 1) + " is empty");
  }
  std::string path = o.model;
  if (path.empty()) {
    auto d = default_model_path();
    if (!d.ok()) return fail(d.status().message());
    path = *d;
  }
  auto model = ModelBuilder(path)
                   .with_device(Device::cpu())
                   .with_threads(o.threads)
                   .with_context_size(o.ctx)
                   .with_batch_size(o.batch)
                   .with_max_sequences(1)
                   .build();
  if (!model.ok()) return fail(model.status().to_string());
  EmbeddingConfig cfg;
  cfg.pooling = *pooling;
  cfg.normalize = !o.no_normalize;
  cfg.dimensions = o.dimensions;
  auto e = model->embed(std::span<const std::string>(texts), cfg);
  if (!e.ok()) return fail(e.status().to_string());
  if (o.json) {
    Json root;
    root["model"] = path;
    root["pooling"] = std::string(pooling_name(e->pooling));
    root["normalized"] = cfg.normalize;
    root["n_dims"] = e->n_dims;
    Json data = Json::array();
    for (size_t i = 0; i < e->vectors.size(); ++i) {
      Json item;
      item["index"] = i;
      item["n_tokens"] = e->n_tokens[i];
      item["embedding"] = e->vectors[i];
      data.push_back(std::move(item));
    }
    root["data"] = std::move(data);
    root["prompt_tokens"] = e->prompt_tokens;
    root["ms"] = e->ms;
    std::printf("%s\n", root.dump().c_str());
    return kExitOk;
  }
  for (const auto& v : e->vectors) {
    std::string line;
    for (size_t c = 0; c < v.size(); ++c) {
      char buf[32];
      std::snprintf(buf, sizeof buf, c == 0 ? "%.6f" : " %.6f", static_cast<double>(v[c]));
      line += buf;
    }
    std::printf("%s\n", line.c_str());
  }
  std::fprintf(stderr, "%zu inputs, %d tokens, %d dims, pooling %s, %.1f ms\n", e->vectors.size(),
               e->prompt_tokens, e->n_dims, std::string(pooling_name(e->pooling)).c_str(), e->ms);
  return kExitOk;
}

}  // namespace

Command register_embed(CLI::App& parent) {
  auto opts = std::make_shared<EmbedOptions>();
  CLI::App* sub = parent.add_subcommand("embed", "Print an embedding vector per text");
  sub->add_option("-m,--model", opts->model,
                  "GGUF file: an encoder (bert) or any decoder (default: $GENIEX_MODEL or the "
                  "default model)");
  auto* texts = sub->add_option("texts", opts->texts, "Texts to embed, one vector each");
  auto* file = sub->add_option("-f,--file", opts->file,
                               "Read the texts from a file, one per line (- = standard input)");
  texts->excludes(file);
  file->excludes(texts);
  sub->add_option("--pooling", opts->pooling,
                  "model (as the GGUF declares; mean when it does not), mean, cls, last or none "
                  "(every token's vector)")
      ->check(CLI::IsMember({"model", "mean", "cls", "last", "none"}));
  sub->add_flag("--no-normalize", opts->no_normalize, "Print vectors as pooled, not unit length");
  sub->add_option("--dimensions", opts->dimensions,
                  "Keep the first N values of each vector (renormalised); 0 = all")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-t,--threads", opts->threads, "Worker threads (0 = the CPUs available)")
      ->check(CLI::Range(0, ModelBuilder::kMaxThreads));
  sub->add_option("-c,--ctx-size", opts->ctx,
                  "Longest input in tokens (0 = the model's training context)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-b,--batch-size", opts->batch, "Tokens per forward pass (inputs are packed)")
      ->check(CLI::Range(1, 65536));
  sub->add_flag("--json", opts->json,
                "Print {\"data\": [{\"index\", \"n_tokens\", \"embedding\"}], ...}");
  return {sub, [opts] { return run_embed(*opts); }};
}

}  // namespace geniex::cli
