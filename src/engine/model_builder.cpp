// ModelBuilder::build and the small public value types (Device, StopReason, Timings).
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

#include "core/regular_file.h"
#include "core/thread_pool.h"
#include "engine/backend_set.h"
#include "engine/chat_template_loader.h"
#include "engine/embedder.h"
#include "engine/model_impl.h"
#include "models/bert_model.h"
#include "models/forward_graph.h"
#include "tokenizer/chat_template_source.h"

namespace geniex {

Result<Device> Device::parse(std::string_view name) {
  if (name == "auto") return automatic();
  if (name == "cpu") return cpu();
  if (name == "gpu") return gpu();
  if (name == "npu") return npu();
  return invalid_argument("unknown device '" + std::string(name) +
                          "' (expected auto, cpu, gpu or npu)");
}

std::string_view Device::name() const {
  switch (kind_) {
    case Kind::kAuto: return "auto";
    case Kind::kCpu: return "cpu";
    case Kind::kGpu: return "gpu";
    case Kind::kNpu: return "npu";
  }
  return "auto";
}

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kEndOfGeneration: return "eog";
    case StopReason::kMaxTokens: return "length";
    case StopReason::kStopString: return "stop";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kContextFull: return "context_full";
  }
  return "unknown";
}

double Timings::prompt_tokens_per_second() const {
  const int32_t n = prompt_tokens - cached_tokens;
  return prompt_ms > 0 ? n * 1000.0 / prompt_ms : 0.0;
}

double Timings::generation_tokens_per_second() const {
  return generation_ms > 0 ? generated_tokens * 1000.0 / generation_ms : 0.0;
}

ModelBuilder::ModelBuilder(std::string path) : path_(std::move(path)) {}
ModelBuilder& ModelBuilder::with_device(Device device) {
  device_ = device;
  return *this;
}
ModelBuilder& ModelBuilder::with_offload_layers(int32_t n) {
  offload_layers_ = n;
  return *this;
}
ModelBuilder& ModelBuilder::with_context_size(int32_t n_ctx) {
  n_ctx_ = n_ctx;
  return *this;
}
ModelBuilder& ModelBuilder::with_threads(int32_t n_threads) {
  n_threads_ = n_threads;
  return *this;
}
ModelBuilder& ModelBuilder::with_batch_size(int32_t n_batch) {
  n_batch_ = n_batch;
  return *this;
}
ModelBuilder& ModelBuilder::with_kv_cache_type(KvCacheType type) {
  kv_type_ = type;
  return *this;
}
ModelBuilder& ModelBuilder::with_kv_budget(int64_t bytes, std::string spill_dir) {
  kv_budget_ = bytes;
  spill_dir_ = std::move(spill_dir);
  return *this;
}
ModelBuilder& ModelBuilder::with_max_sequences(int32_t n) {
  max_sequences_ = n;
  return *this;
}
ModelBuilder& ModelBuilder::with_context_overflow(ContextOverflow policy, int32_t n_keep) {
  overflow_ = policy;
  n_keep_ = n_keep;
  return *this;
}
ModelBuilder& ModelBuilder::with_plugin_dir(std::string dir) {
  plugin_dir_ = std::move(dir);
  return *this;
}

ModelBuilder& ModelBuilder::with_npu_config(std::string config) {
  npu_config_ = std::move(config);
  return *this;
}

ModelBuilder& ModelBuilder::with_mmproj(std::string path) {
  mmproj_ = std::move(path);
  return *this;
}

ModelBuilder& ModelBuilder::with_deterministic(bool on) {
  deterministic_ = on;
  return *this;
}

ModelBuilder& ModelBuilder::with_tuning(BackendTuning tuning) {
  tuning_ = std::move(tuning);
  return *this;
}

namespace {

// BackendTuning::static_batch_tokens, checked and ascending.
Result<std::vector<int32_t>> checked_counts(std::vector<int32_t> counts) {
  for (int32_t v : counts) {
    if (v < 1 || v > 65536) {
      return invalid_argument("static batch tokens: " + std::to_string(v) +
                              " is not a token count (1..65536)");
    }
  }
  std::sort(counts.begin(), counts.end());
  return counts;
}

std::string e_list(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) s += (s.empty() ? "" : "/") + std::to_string(x);
  return s;
}

}  // namespace

Result<models::ForwardGraph> Model::Impl::probe_graph(int32_t n_tokens) const {
  const Model::Impl& m = *this;
  models::ForwardSpec fs;
  fs.n_tokens = n_tokens;
  fs.n_outputs = 1;
  fs.kv_type = m.kv->spec().type;
  for (uint32_t il = 0; il < m.config.n_layer; ++il) {
    fs.kv_list.push_back(1);
    fs.kv_state_rows.push_back(
        m.config.layer_is_conv(il) ? 0 : m.kv->store(static_cast<int>(il)).n_rows());
  }
  return models::build_forward_graph(m.config, m.weights, fs);
}

std::string Model::Impl::explain_placement() {
  std::string out;
  for (const int32_t n : {1, n_batch}) {
    auto fg = probe_graph(n);
    if (!fg.ok()) return out + fg.status().to_string() + "\n";
    out += n == 1 ? "== decode step (1 token)\n"
                  : "== prefill step (" + std::to_string(n) + " tokens)\n";
    out += scheduler->explain(fg->graph);
  }
  return out;
}

ModelBuilder& ModelBuilder::with_log(std::function<void(std::string_view)> log) {
  log_ = std::move(log);
  return *this;
}

namespace {

GgmlType kv_ggml_type(KvCacheType t) {
  switch (t) {
    case KvCacheType::kF32: return GgmlType::kF32;
    case KvCacheType::kQ8_0: return GgmlType::kQ8_0;
    case KvCacheType::kQ4_0: return GgmlType::kQ4_0;
    case KvCacheType::kF16: break;
  }
  return GgmlType::kF16;
}

runtime::DevicePreference preference_of(Device d) {
  switch (d.kind()) {
    case Device::Kind::kCpu: return runtime::DevicePreference::kCpu;
    case Device::Kind::kGpu: return runtime::DevicePreference::kGpu;
    case Device::Kind::kNpu: return runtime::DevicePreference::kNpu;
    case Device::Kind::kAuto: break;
  }
  return runtime::DevicePreference::kAuto;
}

}  // namespace

Result<std::vector<std::string>> ModelBuilder::make_scheduler(Model::Impl& impl) const {
  auto log = log_;
  engine::BackendSetOptions bso;
  bso.device = device_;
  bso.n_threads = n_threads_;
  bso.plugin_dir = plugin_dir_;
  bso.npu_config = npu_config_;
  bso.deterministic = deterministic_;
  bso.tuning = tuning_;
  bso.log = [log](const std::string& line) {
    if (log) log(line);
  };
  std::vector<std::string> warnings;
  bso.warnings = &warnings;
  GENIEX_ASSIGN_OR_RETURN(auto list, engine::make_backends(bso));
  GENIEX_ASSIGN_OR_RETURN(runtime::Scheduler sched,
                          runtime::Scheduler::create(std::move(list), preference_of(device_),
                                                     [log](const std::string& line) {
                                                       if (log) log(line);
                                                     }));
  sched.set_offload_layers(offload_layers_);
  impl.scheduler.emplace(std::move(sched));
  return warnings;
}

Result<Model> ModelBuilder::build() const {
  if (n_ctx_ < 0) {
    return invalid_argument(
        "context size must be >= 1 (or 0 = the model's training context), "
        "got " +
        std::to_string(n_ctx_));
  }
  if (n_batch_ < 1)
    return invalid_argument("batch size must be >= 1, got " + std::to_string(n_batch_));
  if (offload_layers_ < -1) {
    return invalid_argument("offload layers must be >= 0 (or -1 = no limit), got " +
                            std::to_string(offload_layers_));
  }
  static_assert(ModelBuilder::kMaxThreads == ThreadPool::kMaxThreads);
  if (n_threads_ < 0 || n_threads_ > kMaxThreads) {
    return invalid_argument("threads must be in [0, " + std::to_string(kMaxThreads) +
                            "] (0 = the CPUs this process may use), got " +
                            std::to_string(n_threads_));
  }
  // A FIFO, device or directory is named as such (and never opened blocking).
  if (auto f = RegularFile::open(path_); !f.ok()) {
    if (f.status().code() == StatusCode::kNotFound) {
      return not_found("model file '" + path_ + "' does not exist");
    }
    return f.status();
  }
  auto impl = std::make_unique<Model::Impl>();
  GENIEX_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path_));
  impl->file = std::make_unique<gguf::GgufFile>(std::move(file));
  if (models::is_bert(*impl->file)) return build_encoder(std::move(impl));
  GENIEX_ASSIGN_OR_RETURN(impl->config, models::load_config(*impl->file));
  GENIEX_ASSIGN_OR_RETURN(impl->weights, models::bind_weights(*impl->file, impl->config));
  GENIEX_ASSIGN_OR_RETURN(impl->tok, tokenizer::Tokenizer::from_gguf(*impl->file));
  std::string template_origin;
  if (auto t = tokenizer::chat_template_source(*impl->file); t.ok()) {
    const auto& tk = *impl->tok;
    GENIEX_ASSIGN_OR_RETURN(
        engine::LoadedChatTemplate loaded,
        engine::load_chat_template(t->text, tk.bos() >= 0 ? tk.token_text(tk.bos()) : "",
                                   tk.eos() >= 0 ? tk.token_text(tk.eos()) : ""));
    impl->chat_template = std::move(loaded.parsed);
    impl->chat_template_error = loaded.error;
    impl->chat_template_text = t->text;
    template_origin =
        t->origin == tokenizer::ChatTemplateOrigin::kFile ? "file" : "builtin:" + t->family;
  }
  const auto& cfg = impl->config;
  const int32_t n_ctx_train = static_cast<int32_t>(
      std::min<int64_t>(cfg.context_length, std::numeric_limits<int32_t>::max()));
  if (n_ctx_ == 0 && n_ctx_train <= 0) {
    return invalid_argument(
        "context size 0 means the model's training context, but the file "
        "does not declare one: give a context size");
  }
  const int32_t n_ctx = n_ctx_ == 0       ? n_ctx_train
                        : n_ctx_train > 0 ? std::min(n_ctx_, n_ctx_train)
                                          : n_ctx_;
  if (n_ctx < 2) {
    return invalid_argument("context size " + std::to_string(n_ctx) +
                            " is too small: it must hold a prompt token and a generated one "
                            "(at least 2)");
  }
  if (kv_budget_ < 0) return invalid_argument("KV budget must be >= 0 bytes");
  if (max_sequences_ < 1 || max_sequences_ > 256) {
    return invalid_argument("max sequences must be in [1, 256], got " +
                            std::to_string(max_sequences_));
  }
  if (n_keep_ < 0 || n_keep_ >= n_ctx / 2) {
    return invalid_argument("context shift keeps " + std::to_string(n_keep_) +
                            " tokens; it must be in [0, n_ctx / 2 = " + std::to_string(n_ctx / 2) +
                            ")");
  }
  runtime::KvManagerSpec spec;
  spec.n_ctx = n_ctx;
  spec.n_batch = n_batch_;
  spec.n_seq_max = max_sequences_;
  spec.type = kv_ggml_type(kv_type_);
  spec.budget_bytes = static_cast<size_t>(kv_budget_);
  if (!spill_dir_.empty()) {
    spec.spill_dir = spill_dir_;
  } else if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') {
    spec.spill_dir = tmp;
  }
  for (uint32_t il = 0; il < cfg.n_layer; ++il) {
    runtime::KvLayerSpec l;
    l.k_row_elems = static_cast<int64_t>(cfg.n_embd_k_gqa(il));
    l.v_row_elems = static_cast<int64_t>(cfg.n_embd_v_gqa(il));
    l.sliding_window = cfg.layer_is_sliding(il) ? static_cast<int32_t>(cfg.sliding_window) : 0;
    l.state_bytes = cfg.layer_state_bytes(il);  // lfm2 conv layers: no K/V, a state instead
    spec.layers.push_back(l);
  }
  GENIEX_ASSIGN_OR_RETURN(impl->kv, runtime::KvManager::create(spec));
  impl->n_ctx = n_ctx;
  impl->overflow = overflow_;
  impl->shift_keep = n_keep_;

  GENIEX_ASSIGN_OR_RETURN(std::vector<std::string> warnings, make_scheduler(*impl));
  impl->n_batch = n_batch_;
  impl->runner = std::make_unique<engine::StepRunner>(impl->config, impl->weights, *impl->scheduler,
                                                      *impl->kv);
  {
    // Static-shape units (NPUs) take fixed token counts: steps are padded to them and prompts
    // prefill in chunks of the largest. BackendTuning::static_batch_tokens forces it (tests).
    std::vector<int32_t> counts = impl->scheduler->static_batch_tokens();
    if (!tuning_.static_batch_tokens.empty()) {
      GENIEX_ASSIGN_OR_RETURN(counts, checked_counts(tuning_.static_batch_tokens));
    }
    if (!counts.empty()) {
      impl->runner->set_static_batches(counts);
      impl->n_batch = std::min(impl->n_batch, counts.back());
      if (log_) {
        log_("static shapes: steps padded to " + std::string(e_list(counts)) +
             " tokens; prompts prefill in chunks of " + std::to_string(impl->n_batch));
      }
    }
  }

  ModelInfo& info = impl->info;
  info.path = path_;
  info.architecture = cfg.arch_name;
  info.name = cfg.name;
  for (const auto& t : impl->file->tensors()) {
    int64_t n = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) n *= static_cast<int64_t>(t.ne[d]);
    info.n_params += n;
  }
  info.file_bytes = static_cast<int64_t>(impl->file->file_size());
  info.n_layer = static_cast<int32_t>(cfg.n_layer);
  info.n_embd = static_cast<int32_t>(cfg.n_embd);
  info.n_vocab = static_cast<int32_t>(cfg.n_vocab);
  info.n_ctx_train = static_cast<int32_t>(cfg.context_length);
  info.n_ctx = n_ctx;
  info.n_threads = n_threads_ > 0 ? n_threads_ : ThreadPool::default_threads();
  info.bos_token = impl->tok->bos();
  info.add_bos = impl->tok->add_bos() && info.bos_token >= 0;
  info.chat_template_origin = template_origin;
  info.warnings = std::move(warnings);
  if (!mmproj_.empty()) {
    GENIEX_ASSIGN_OR_RETURN(impl->vision,
                            engine::VisionEncoder::load(mmproj_, impl->config, *impl->tok));
    info.mmproj_path = mmproj_;
    info.image_marker = impl->vision->marker();
  }
  // Place once at load so that an impossible placement fails here, not at the first token.
  {
    GENIEX_ASSIGN_OR_RETURN(auto fg, impl->probe_graph(1));
    GENIEX_ASSIGN_OR_RETURN(auto placement, impl->scheduler->place(fg.graph));
    if (placement.segments.size() <= 1) {
      info.placement = placement.stage + " -> " + placement.backend;
    } else {
      for (const auto& seg : placement.segments) {
        info.placement += (info.placement.empty() ? "" : ", ") + seg.label + " -> " + seg.backend;
      }
    }
    for (const auto& n : placement.notes) info.placement += " (" + n + ")";
  }
  GENIEX_ASSIGN_OR_RETURN(impl->embedder,
                          engine::Embedder::for_decoder(impl->config, impl->weights, *impl->file));
  info.pooling = std::string(pooling_name(impl->embedder->declared_pooling()));
  engine::BatchEngineOptions bo;
  bo.n_batch = impl->n_batch;
  bo.n_ctx = n_ctx;
  Model::Impl* raw = impl.get();
  bo.on_context_full = [raw](runtime::KvManager::SeqId seq) -> Result<bool> {
    if (raw->overflow != ContextOverflow::kShift) return false;
    GENIEX_TRY(raw->shift_context(seq));
    return true;
  };
  try {
    impl->batch = std::make_unique<engine::BatchEngine>(*impl->kv, *impl->runner, std::move(bo));
  } catch (const std::system_error& e) {
    // Its thread is started last in its constructor, so nothing is left running. Past a thread
    // limit the pool above usually fails first; this is the same error when it does not.
    return resource_exhausted(std::string("the system refused the engine's thread: ") + e.what());
  }
  return Model(std::move(impl));
}

}  // namespace geniex
