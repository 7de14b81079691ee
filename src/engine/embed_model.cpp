// Model::embed, the pooling names, and ModelBuilder's load of an encoder-only model (bert).
#include <algorithm>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "core/thread_pool.h"
#include "engine/embedder.h"
#include "engine/model_impl.h"
#include "models/bert_model.h"

namespace geniex {

Result<Pooling> parse_pooling(std::string_view name) {
  if (name == "model") return Pooling::kModel;
  if (name == "none") return Pooling::kNone;
  if (name == "mean") return Pooling::kMean;
  if (name == "cls") return Pooling::kCls;
  if (name == "last") return Pooling::kLast;
  return invalid_argument("unknown pooling '" + std::string(name) +
                          "' (expected model, none, mean, cls or last)");
}

std::string_view pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kModel: return "model";
    case Pooling::kNone: return "none";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
  }
  return "model";
}

Status Model::Impl::encoder_only_error(std::string_view what) const {
  return invalid_argument(std::string(what) + ": model '" + info.path + "' is an " +
                          info.architecture +
                          " encoder: it only embeds (Model::embed, geniex embed, "
                          "/v1/embeddings)");
}

Result<Embeddings> Model::embed(std::span<const std::string> texts, const EmbeddingConfig& config) {
  std::vector<std::vector<int32_t>> inputs;
  inputs.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    GENIEX_ASSIGN_OR_RETURN(auto ids, tokenize(texts[i], config.add_special, false));
    if (ids.empty()) {
      return invalid_argument("embed: input " + std::to_string(i) + " has no tokens");
    }
    inputs.push_back(std::move(ids));
  }
  return embed(std::span<const std::vector<int32_t>>(inputs), config);
}

Result<Embeddings> Model::embed(std::span<const std::vector<int32_t>> inputs,
                                const EmbeddingConfig& config) {
  Impl& m = *impl_;
  if (inputs.empty()) return invalid_argument("embed: no inputs");
  if (config.dimensions < 0 || config.dimensions > m.embedder->n_embd()) {
    return invalid_argument("embed: dimensions " + std::to_string(config.dimensions) +
                            " outside [1, " + std::to_string(m.embedder->n_embd()) + "] (0: all)");
  }
  const int32_t limit =
      m.embedder->max_positions() > 0 ? std::min(m.n_ctx, m.embedder->max_positions()) : m.n_ctx;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      return invalid_argument("embed: input " + std::to_string(i) + " has no tokens");
    }
    if (inputs[i].size() > static_cast<size_t>(limit)) {
      return out_of_range("embed: input " + std::to_string(i) + " has " +
                          std::to_string(inputs[i].size()) + " tokens, more than the context (" +
                          std::to_string(limit) + ")");
    }
    GENIEX_TRY(m.check_tokens(inputs[i]));
  }
  std::lock_guard<std::mutex> lock(m.embed_mu);
  Result<Embeddings> out = internal_error("embed: not run");
  const auto run = [&] {
    out = m.embedder->run(inputs, config.pooling, config.normalize, config.dimensions, *m.scheduler,
                          std::max(m.n_batch, 1));
  };
  if (m.batch) {
    m.batch->exclusive(run);  // the scheduler is the engine's: no step while this runs
  } else {
    run();
  }
  return out;
}

Result<Model> ModelBuilder::build_encoder(std::unique_ptr<Model::Impl> impl) const {
  const gguf::GgufFile& f = *impl->file;
  GENIEX_ASSIGN_OR_RETURN(models::BertConfig bc, models::load_bert_config(f));
  GENIEX_ASSIGN_OR_RETURN(models::BertWeights bw, models::bind_bert_weights(f, bc));
  GENIEX_ASSIGN_OR_RETURN(impl->tok, tokenizer::Tokenizer::from_gguf(f));
  GENIEX_ASSIGN_OR_RETURN(std::vector<std::string> warnings, make_scheduler(*impl));
  const auto n_train = static_cast<int32_t>(bc.context_length);
  impl->n_ctx = n_ctx_ == 0 ? n_train : std::min(n_ctx_, n_train);
  impl->n_batch = std::max(n_batch_, impl->n_ctx);
  impl->config.arch_name = "bert";
  impl->config.name = bc.name;
  impl->config.n_vocab = bc.n_vocab;
  impl->config.n_embd = bc.n_embd;
  impl->config.n_layer = bc.n_layer;
  impl->config.context_length = bc.context_length;

  ModelInfo& info = impl->info;
  info.path = path_;
  info.architecture = "bert";
  info.name = bc.name;
  for (const auto& t : f.tensors()) {
    int64_t n = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) n *= static_cast<int64_t>(t.ne[d]);
    info.n_params += n;
  }
  info.file_bytes = static_cast<int64_t>(f.file_size());
  info.n_layer = static_cast<int32_t>(bc.n_layer);
  info.n_embd = static_cast<int32_t>(bc.n_embd);
  info.n_vocab = static_cast<int32_t>(bc.n_vocab);
  info.n_ctx_train = n_train;
  info.n_ctx = impl->n_ctx;
  info.n_threads = n_threads_ > 0 ? n_threads_ : ThreadPool::default_threads();
  info.bos_token = impl->tok->bos();
  info.add_bos = impl->tok->add_bos() && info.bos_token >= 0;
  info.warnings = std::move(warnings);
  info.embedding_only = true;
  // An encoder converted without a pooling declaration: BERT's [CLS] (llama.cpp's default).
  const Pooling declared = engine::pooling_from_gguf(bc.pooling_type).value_or(Pooling::kCls);
  info.pooling = std::string(pooling_name(declared));
  impl->embedder = std::make_unique<engine::Embedder>(std::move(bc), std::move(bw), declared);
  {
    GENIEX_ASSIGN_OR_RETURN(auto bg, models::build_bert_graph(*impl->embedder->bert_config(),
                                                              impl->embedder->bert_weights(), 1));
    GENIEX_ASSIGN_OR_RETURN(auto placement, impl->scheduler->place(bg.graph));
    info.placement = placement.stage + " -> " + placement.backend;
  }
  return Model(std::move(impl));
}

}  // namespace geniex
