#include "model_flags.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

#include "default_model.h"
#include "gguf/gguf_reader.h"
#include "number_flags.h"

namespace geniex::cli {
namespace {
constexpr int32_t kMaxInt32 = std::numeric_limits<int32_t>::max();
}  // namespace

void add_model_flags(CLI::App* c, ModelOptions& o) {
  c->add_option("-m,--model", o.model,
                "GGUF model (default: see `geniex list`; GENIEX_MODEL overrides)");
  add_mmproj_flags(c, o.mmproj, o.no_mmproj);
  c->add_option("--device", o.device, "auto, cpu, gpu or npu")->capture_default_str();
  add_offload_option(c, o.offload_layers);
  add_npu_config_option(c, o.npu_config);
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

CLI::Option* add_npu_config_option(CLI::App* c, std::string& config) {
  return c->add_option("--npu-config", config,
                       "config string of the NPU plugins (key=value;...; NAME:key=value for one "
                       "plugin, e.g. qnn-htp:precision=w8)");
}

CLI::Option* add_offload_option(CLI::App* c, int32_t& n) {
  return add_count_option(c, "--offload-layers", n, -1, kMaxInt32,
                          "decoder layers on the --device accelerator: the last N (and the output "
                          "head when N >= 1), the rest on the CPU; 0 = all on the CPU, -1 = no "
                          "limit");
}

void add_mmproj_flags(CLI::App* c, std::string& mmproj, bool& no_mmproj) {
  c->add_option("--mmproj", mmproj,
                "vision encoder + projector GGUF of a vision-language model (default: the one "
                "mmproj-*.gguf beside the model file, if there is exactly one)");
  c->add_flag("--no-mmproj", no_mmproj,
              "do not look for an mmproj-*.gguf beside the model (text only)");
}

std::vector<std::string> mmproj_candidates(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  fs::path dir = fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  const fs::path self = fs::path(model_path).filename();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("mmproj-") && name.ends_with(".gguf") && name.size() > 12 &&
        it->path().filename() != self && it->is_regular_file(ec)) {
      found.push_back(it->path().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

// The projector width a discovered mmproj must give: the embedding width of the model at
// `model_path` when its vocabulary has the image token (a vision-language model's language
// half); 0 otherwise (a text model, or a file that does not parse: the load reports it).
uint64_t vision_embedding_width(const std::string& model_path) {
  auto f = gguf::GgufFile::open(model_path);
  if (!f.ok()) return 0;
  auto arch = f->get_string("general.architecture");
  if (!arch.ok()) return 0;
  auto width = f->get_uint(*arch + ".embedding_length");
  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  if (!width.ok() || !tokens.ok()) return 0;
  if (std::find(tokens->begin(), tokens->end(), "<image>") == tokens->end()) return 0;
  return *width;
}

// Whether `mmproj_path` is a vision projector (general.architecture "clip") giving `width`-wide
// embeddings.
bool mmproj_fits(const std::string& mmproj_path, uint64_t width) {
  auto f = gguf::GgufFile::open(mmproj_path);
  if (!f.ok()) return false;
  auto arch = f->get_string("general.architecture");
  auto dim = f->get_uint("clip.vision.projection_dim");
  return arch.ok() && *arch == "clip" && dim.ok() && *dim == width;
}

}  // namespace

Result<std::string> resolve_mmproj(const std::string& model_path, const std::string& flag,
                                   bool no_discovery, const char* who) {
  if (!flag.empty()) {
    if (no_discovery)
      return invalid_argument("--mmproj FILE and --no-mmproj contradict each other");
    std::error_code ec;
    if (!std::filesystem::exists(flag, ec)) {
      return not_found("--mmproj " + flag + ": no such file");
    }
    return flag;
  }
  if (no_discovery) return std::string();
  std::vector<std::string> found = mmproj_candidates(model_path);
  if (found.empty()) return std::string();
  // Only a vision-language model looks, and only at projectors of its width: text models that
  // share a folder with a VL model's mmproj load as before.
  const uint64_t width = vision_embedding_width(model_path);
  if (width == 0) return std::string();
  std::erase_if(found, [&](const std::string& p) { return !mmproj_fits(p, width); });
  // Several that fit: mmproj-<model name>.gguf is the one that belongs to this model.
  if (found.size() > 1) {
    const std::string own = "mmproj-" + std::filesystem::path(model_path).filename().string();
    auto it = std::find_if(found.begin(), found.end(), [&](const std::string& p) {
      return std::filesystem::path(p).filename() == own;
    });
    if (it != found.end()) found = {*it};
  }
  if (found.size() == 1) {
    std::fprintf(stderr,
                 "%s: using mmproj %s (found beside the model; --no-mmproj to load it as text "
                 "only)\n",
                 who, found[0].c_str());
    return found[0];
  }
  if (found.size() > 1) {
    std::string names;
    for (const auto& f : found) names += (names.empty() ? "" : ", ") + f;
    std::fprintf(stderr,
                 "%s: note: several mmproj files beside the model (%s); using none: pick one "
                 "with --mmproj FILE\n",
                 who, names.c_str());
  }
  return std::string();
}

Status check_image_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument("image " + path + ": is a directory");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    const int e = errno;
    if (e == ENOENT) return not_found("image " + path + ": no such file");
    return Status(StatusCode::kIoError,
                  "image " + path + ": cannot read: " + std::strerror(e != 0 ? e : EIO));
  }
  return Status();
}

Result<std::vector<ContentPart>> image_message_parts(const std::string& text,
                                                     std::span<const Image> images,
                                                     const std::string& marker) {
  std::vector<std::string> pieces;
  if (!marker.empty()) {
    for (size_t at = 0;;) {
      const size_t hit = text.find(marker, at);
      pieces.push_back(text.substr(at, hit == std::string::npos ? hit : hit - at));
      if (hit == std::string::npos) break;
      at = hit + marker.size();
    }
  } else {
    pieces.push_back(text);
  }
  const size_t n_markers = pieces.size() - 1;
  if (n_markers != 0 && n_markers != images.size()) {
    return invalid_argument("the prompt has " + std::to_string(n_markers) + " " + marker +
                            " marker(s) for " + std::to_string(images.size()) +
                            " image(s) (give one per image, or none to put every image before "
                            "the text)");
  }
  std::vector<ContentPart> parts;
  if (n_markers == 0) {
    for (const Image& im : images) parts.push_back(ContentPart::image_part(im));
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) parts.push_back(ContentPart::image_part(images[i - 1]));
    if (!pieces[i].empty()) parts.push_back(ContentPart::text_part(pieces[i]));
  }
  return parts;
}

Status no_mmproj_error(const std::string& model_path, bool no_mmproj) {
  const std::string name = std::filesystem::path(model_path).filename().string();
  return invalid_argument(
      name + " takes no images: it was loaded as a text model" +
      (no_mmproj ? std::string(" (--no-mmproj)") : std::string()) +
      "; give its vision projector with --mmproj FILE (or put the one mmproj-*.gguf beside it)");
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
  GENIEX_ASSIGN_OR_RETURN(const int32_t offload, offload_layers_of(o.offload_layers, o.ignored));
  auto cpu = parse_cpu_tuning(o.cpu_tuning);
  if (!cpu.ok()) return invalid_argument("--cpu-tuning: " + cpu.status().message());
  GENIEX_ASSIGN_OR_RETURN(std::string mmproj, resolve_mmproj(path, o.mmproj, o.no_mmproj));
  ModelBuilder b(path);
  if (!mmproj.empty()) b.with_mmproj(mmproj);
  BackendTuning tuning;
  tuning.cpu = std::move(*cpu);
  b.with_tuning(tuning);
  b.with_device(*device)
      .with_offload_layers(offload)
      .with_npu_config(o.npu_config)
      .with_context_size(o.ctx)
      .with_threads(o.threads)
      .with_batch_size(o.batch);
  GENIEX_TRY(apply_kv_flags(o.kv, b));
  if (o.verbose) {
    b.with_log([](std::string_view line) {
      std::fprintf(stderr, "geniex: %.*s\n", static_cast<int>(line.size()), line.data());
    });
  }
  return PreparedModel{path, std::move(b), std::move(mmproj)};
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
