#include "cmd_convert.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "convert/convert.h"
#include "human_units.h"

namespace geniex::cli {
namespace {

struct ConvertFlags {
  std::string hf_dir;
  std::string output;
  std::string outtype = "auto";
  std::string tokenizer_pre;
  std::string mmproj;
};

int run_convert(const ConvertFlags& f) {
  auto type = convert::parse_outtype(f.outtype);
  if (!type.ok()) {
    std::fprintf(stderr, "geniex convert: --outtype: %s\n", type.status().message().c_str());
    return kExitUsage;
  }
  convert::ConvertOptions opts;
  opts.outtype = *type;
  opts.tokenizer_pre = f.tokenizer_pre;
  opts.mmproj_path = f.mmproj;
  const auto start = std::chrono::steady_clock::now();
  auto r = convert::convert_hf_to_gguf(f.hf_dir, f.output, opts);
  if (!r.ok()) {
    std::fprintf(stderr, "geniex convert: %s\n", r.status().message().c_str());
    return kExitError;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s (%s) -> %s: %zu tensors, %s parameters, %s, %s in %.1f s\n", r->hf_arch.c_str(),
              r->gguf_arch.c_str(), f.output.c_str(), r->n_tensors,
              convert::size_label(r->n_params).c_str(),
              std::string(convert::outtype_name(r->outtype)).c_str(),
              human_bytes(r->file_bytes, 1).c_str(), secs);
  if (!f.mmproj.empty()) {
    std::printf("vision projector -> %s: %zu tensors\n", f.mmproj.c_str(), r->mmproj_tensors);
  }
  return kExitOk;
}

}  // namespace

Command register_convert(CLI::App& parent) {
  auto f = std::make_shared<ConvertFlags>();
  CLI::App* c = parent.add_subcommand(
      "convert", "convert a Hugging Face checkpoint directory (safetensors) to GGUF");
  c->add_option("hf_dir", f->hf_dir,
                "checkpoint directory: config.json, *.safetensors, tokenizer.json, "
                "tokenizer_config.json")
      ->required();
  c->add_option("-o,--outfile", f->output, "GGUF file to write (atomically: temp file + rename)")
      ->required();
  c->add_option("--outtype", f->outtype,
                "f32, f16, bf16, q8_0, or auto (bf16/f16 after the weights' own type)")
      ->capture_default_str();
  c->add_option("--tokenizer-pre", f->tokenizer_pre,
                "BPE pre-tokenizer name (llama-bpe, qwen2, ...); default: detected from "
                "tokenizer.json");
  c->add_option("--mmproj", f->mmproj,
                "also write the vision projector GGUF here (LFM2-VL checkpoints)");
  return {c, [f] { return run_convert(*f); }};
}

}  // namespace geniex::cli
