// Model::Impl: everything a loaded model owns — the mapped file, config, weights, tokenizer,
// chat template, scheduler over the backends, the KV cache of its one sequence — and the
// evaluation step that turns token ids into logits through the forward graph.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/batch_engine.h"
#include "engine/embedder.h"
#include "engine/image_prompt.h"
#include "engine/step_runner.h"
#include "engine/vision_encoder.h"
#include "geniex/geniex.hpp"
#include "gguf/gguf_reader.h"
#include "graph/run_reference.h"
#include "models/forward_graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"
#include "runtime/kv_manager.h"
#include "runtime/scheduler.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/tokenizer.h"

namespace geniex {

struct Model::Impl {
  std::unique_ptr<gguf::GgufFile> file;
  models::ModelConfig config;
  models::ModelWeights weights;
  std::shared_ptr<const tokenizer::Tokenizer> tok;
  /// Parsed once at load; nullopt when none is known or it does not parse.
  std::optional<jinja::Template> chat_template;
  Status chat_template_error;      ///< why the file's template does not parse (chat fails with it)
  std::string chat_template_text;  ///< the template's source ("" when none is known)
  std::optional<runtime::Scheduler> scheduler;
  std::unique_ptr<runtime::KvManager> kv;
  std::unique_ptr<engine::StepRunner> runner;
  int32_t n_batch = 512;
  int32_t n_ctx = 0;
  ContextOverflow overflow = ContextOverflow::kStop;
  int32_t shift_keep = 0;  ///< tokens kept at the start by a context shift
  ModelInfo info;

  /// Context shift of sequence `seq`: keeps the first shift_keep tokens and drops half of the
  /// rest.
  Status shift_context(runtime::KvManager::SeqId seq);

  /// Identifies the model and KV layout in state files.
  [[nodiscard]] std::string state_fingerprint() const;

  /// The forward graph of a step of `n_tokens` tokens over a one-entry KV list: what the
  /// scheduler places at load time and explains.
  [[nodiscard]] Result<models::ForwardGraph> probe_graph(int32_t n_tokens) const;
  /// Scheduler::explain for a decode step and a prefill step over the paged cache.
  [[nodiscard]] std::string explain_placement();

  /// Checks ids are inside the vocabulary.
  Status check_tokens(std::span<const int32_t> tokens) const;

  /// The vision encoder (a model built with an mmproj file), else null.
  std::unique_ptr<engine::VisionEncoder> vision;
  struct ImageStats {
    int64_t images = 0, views = 0;
    double encode_ms = 0.0, prepare_ms = 0.0;
  } image_stats;  ///< images encoded so far (under image_stats_mu)
  mutable std::mutex image_stats_mu;
  /// Raw text with image markers as ids: one image token per image (at the markers, or all
  /// before the text when it has none), BOS first when add_special asks for it.
  [[nodiscard]] Result<std::vector<int32_t>> image_text_ids(std::string_view prompt,
                                                            size_t n_images, bool add_special,
                                                            bool parse_special) const;
  /// "this model takes no images".
  [[nodiscard]] Status no_images_error() const;
  /// Decodes and preprocesses `images` (on this thread) and expands `ids`, which holds one
  /// image token per image, into the request's prompt; the engine encodes each image when its
  /// prefill reaches it (never, when the prefix cache already holds it).
  Result<engine::ImagePrompt> image_prompt(std::span<const int32_t> ids,
                                           std::span<const Image> images);
  /// Runs a logits request over `tokens` (token ids, or image keys where `images` gives rows):
  /// rows first_row .. end, n_vocab floats each.
  Result<std::vector<float>> logits(std::span<const int32_t> tokens,
                                    std::shared_ptr<engine::PromptImages> images,
                                    int32_t first_row);
  /// Runs a generate request over `prompt` (token ids, or image keys where `images` gives rows).
  Result<Generation> generate(std::span<const int32_t> prompt,
                              std::shared_ptr<engine::PromptImages> images,
                              const GenerationConfig& config, const TokenCallback& on_token);

  /// Embedding requests (every model); an encoder-only model (bert) has nothing else: no KV,
  /// runner or batch engine.
  std::unique_ptr<engine::Embedder> embedder;
  std::mutex embed_mu;  ///< one embed() at a time on the scheduler
  /// kFailedPrecondition for what an encoder-only model cannot do.
  [[nodiscard]] Status encoder_only_error(std::string_view what) const;

  /// Declared last: destroyed first (its thread uses kv and runner).
  std::unique_ptr<engine::BatchEngine> batch;
};

}  // namespace geniex
