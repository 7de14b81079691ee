// Model: tokenization, chat templating and the generate loop (sampling, streaming, stop
// strings, cancellation, timings) over Model::Impl::eval.
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "engine/image_prompt.h"
#include "engine/model_impl.h"
#include "engine/request.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/stop_matcher.h"
#include "tokenizer/jinja/chat_template.h"

namespace geniex {

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const ModelInfo& Model::info() const { return impl_->info; }

void Model::reset() {
  if (impl_->batch) impl_->batch->reset();
}

Status Model::save_state(const std::string& path) {
  Impl& m = *impl_;
  if (!m.batch) return m.encoder_only_error("save_state");
  return m.batch->with_last_sequence(
      [&](runtime::KvManager::SeqId seq) { return m.kv->save(seq, path, m.state_fingerprint()); });
}

Status Model::load_state(const std::string& path) {
  Impl& m = *impl_;
  if (!m.batch) return m.encoder_only_error("load_state");
  return m.batch->with_idle_sequence([&](runtime::KvManager::SeqId seq) {
    GENIEX_TRY(m.kv->load(seq, path, m.state_fingerprint()));
    // A conversation with images holds image keys (engine/image_prompt.h) at image positions.
    std::vector<int32_t> ids(m.kv->tokens(seq).begin(), m.kv->tokens(seq).end());
    if (m.vision) std::erase_if(ids, [](int32_t t) { return t >= engine::kImageKeyBase; });
    Status s = m.check_tokens(ids);
    if (!s.ok()) m.kv->truncate(seq, 0);
    return s;
  });
}

std::vector<int32_t> Model::cached_tokens() const {
  std::vector<int32_t> out;
  Impl& m = *impl_;
  if (!m.batch) return out;
  (void)m.batch->with_last_sequence([&](runtime::KvManager::SeqId seq) {
    const auto t = m.kv->tokens(seq);
    out.assign(t.begin(), t.end());
    return Status{};
  });
  return out;
}

KvStats Model::kv_stats() const {
  KvStats k;
  Impl& m = *impl_;
  if (!m.batch) return k;
  (void)m.batch->with_last_sequence([&](runtime::KvManager::SeqId seq) {
    const auto st = m.kv->stats();
    k.bytes_per_token = static_cast<int64_t>(m.kv->bytes_per_token());
    k.blocks_in_use = st.blocks_in_use;
    k.blocks_cached = st.blocks_cached;
    k.bytes_resident = st.bytes_resident;
    const int64_t frame = st.frames_resident > 0 ? st.bytes_resident / st.frames_resident : 0;
    k.bytes_spilled = st.frames_spilled * frame;
    k.prefix_hits = st.prefix_hits;
    k.snapshot_bytes = st.snapshot_bytes;
    k.cached_tokens = m.kv->n_tokens(seq);
    return Status{};
  });
  return k;
}

EngineStats Model::engine_stats() const {
  if (!impl_->batch) return {};
  const auto s = impl_->batch->stats();
  EngineStats e{s.steps, s.batched_tokens, s.active, s.queued, 0, 0};
  impl_->batch->exclusive([&] {
    e.fallbacks = impl_->scheduler->fallbacks();
    e.boundary_bytes = impl_->scheduler->boundary_bytes();
  });
  return e;
}

ImageStats Model::image_stats() const {
  std::lock_guard<std::mutex> lock(impl_->image_stats_mu);
  const auto& s = impl_->image_stats;
  return ImageStats{s.images, s.views, s.encode_ms, s.prepare_ms};
}

std::string Model::explain_placement() const {
  std::string out;
  Impl& m = *impl_;
  if (!m.batch) return "encoder-only model: " + m.info.placement + "\n";
  m.batch->exclusive([&] { out = m.explain_placement(); });
  return out;
}

std::vector<StageTiming> Model::stage_timings() const {
  std::vector<StageTiming> out;
  for (const auto& p : impl_->scheduler->profile()) {
    out.push_back(
        {p.label, p.backend, p.runs, static_cast<double>(p.ns) / 1e6, p.bytes_in, p.bytes_out});
  }
  return out;
}

void Model::reset_stage_timings() { impl_->scheduler->reset_profile(); }

Result<KvCacheType> parse_kv_cache_type(std::string_view name) {
  if (name == "f16") return KvCacheType::kF16;
  if (name == "f32") return KvCacheType::kF32;
  if (name == "q8_0") return KvCacheType::kQ8_0;
  if (name == "q4_0") return KvCacheType::kQ4_0;
  return invalid_argument("KV cache type '" + std::string(name) +
                          "' (expected f16, f32, q8_0 or q4_0)");
}

bool Model::is_end_of_generation(int32_t token) const { return impl_->tok->is_eog(token); }

Result<std::vector<int32_t>> Model::tokenize(std::string_view text, bool add_special,
                                             bool parse_special) const {
  tokenizer::EncodeOptions o;
  o.add_special = add_special;
  o.parse_special = parse_special;
  return impl_->tok->encode(text, o);
}

Result<std::string> Model::detokenize(std::span<const int32_t> tokens) const {
  return impl_->tok->decode(tokens);
}

std::string Model::token_piece(int32_t token) const {
  if (token < 0 || token >= impl_->info.n_vocab) return {};
  return impl_->tok->token_to_piece(token, true);
}

Result<std::string> Model::apply_chat_template(std::span<const ChatMessage> messages,
                                               bool add_generation_prompt) const {
  return apply_chat_template(messages, add_generation_prompt, ChatTemplateOptions{});
}

const std::string& Model::chat_template_source() const { return impl_->chat_template_text; }

namespace {

/// A tool call's arguments as the template sees them: parsed JSON when they are JSON (templates
/// write `arguments | tojson`), else the string.
nlohmann::ordered_json call_arguments(const std::string& text) {
  auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return text;
  return j;
}

Result<nlohmann::ordered_json> json_option(const std::string& text, const char* what,
                                           bool want_array) {
  auto j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || (want_array ? !j.is_array() : !j.is_object())) {
    return invalid_argument(std::string("chat template option '") + what + "' is not a JSON " +
                            (want_array ? "array" : "object"));
  }
  return j;
}

}  // namespace

Result<std::string> Model::apply_chat_template(std::span<const ChatMessage> messages,
                                               bool add_generation_prompt,
                                               const ChatTemplateOptions& options) const {
  if (!impl_->chat_template && !impl_->chat_template_error.ok()) {
    return impl_->chat_template_error;
  }
  if (!impl_->chat_template) {
    return not_found("model '" + impl_->info.path +
                     "' has no chat template and its architecture has no built-in one; use "
                     "generate() with raw text");
  }
  jinja::ChatTemplateInputs in;
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
      return invalid_argument("chat message role '" + m.role +
                              "' (expected system, user, assistant or tool)");
    }
    nlohmann::ordered_json msg = {{"role", m.role}};
    if (m.parts.empty()) {
      msg["content"] = m.content;
    } else {
      // transformers' list form: the template writes its image marker for each image part.
      nlohmann::ordered_json parts = nlohmann::ordered_json::array();
      for (const auto& part : m.parts) {
        if (part.type == ContentPart::Type::kImage) {
          parts.push_back({{"type", "image"}});
        } else {
          parts.push_back({{"type", "text"}, {"text", part.text}});
        }
      }
      msg["content"] = std::move(parts);
    }
    if (!m.tool_calls.empty()) {
      nlohmann::ordered_json calls = nlohmann::ordered_json::array();
      for (const auto& c : m.tool_calls) {
        calls.push_back(
            {{"id", c.id},
             {"type", "function"},
             {"function", {{"name", c.name}, {"arguments", call_arguments(c.arguments)}}}});
      }
      msg["tool_calls"] = std::move(calls);
    }
    if (!m.tool_call_id.empty()) msg["tool_call_id"] = m.tool_call_id;
    if (!m.name.empty()) msg["name"] = m.name;
    in.messages.push_back(std::move(msg));
  }
  if (!options.tools.empty()) {
    GENIEX_ASSIGN_OR_RETURN(in.tools, json_option(options.tools, "tools", true));
  }
  if (!options.extra_context.empty()) {
    GENIEX_ASSIGN_OR_RETURN(in.extra_context,
                            json_option(options.extra_context, "extra_context", false));
  }
  in.add_generation_prompt = add_generation_prompt;
  const auto& tok = *impl_->tok;
  if (tok.bos() >= 0) in.bos_token = tok.token_text(tok.bos());
  if (tok.eos() >= 0) in.eos_token = tok.token_text(tok.eos());
  GENIEX_ASSIGN_OR_RETURN(std::string text, jinja::render_chat_template(*impl_->chat_template, in));
  if (add_generation_prompt) text += options.reply_prefix;
  return text;
}

Result<Generation> Model::chat(std::span<const ChatMessage> messages,
                               const GenerationConfig& config, const TokenCallback& on_token) {
  return chat(messages, ChatTemplateOptions{}, config, on_token);
}

Result<Generation> Model::chat(std::span<const ChatMessage> messages,
                               const ChatTemplateOptions& options, const GenerationConfig& config,
                               const TokenCallback& on_token) {
  std::vector<Image> images;
  for (const auto& m : messages) {
    for (const auto& part : m.parts) {
      if (part.type == ContentPart::Type::kImage) images.push_back(part.image);
    }
  }
  if (!images.empty() && !impl_->vision) return impl_->no_images_error();
  GENIEX_ASSIGN_OR_RETURN(auto ids, chat_tokens(messages, options));
  if (images.empty()) return generate(std::span<const int32_t>(ids), config, on_token);
  const int32_t image_token = impl_->vision->image_token();
  if (static_cast<size_t>(std::count(ids.begin(), ids.end(), image_token)) != images.size()) {
    // A template that renders only string content (no image entries in its list handling):
    // give it each message as text with the image marker where each image was.
    std::vector<ChatMessage> flat(messages.begin(), messages.end());
    for (auto& m : flat) {
      if (m.parts.empty()) continue;
      m.content.clear();
      for (const auto& part : m.parts) {
        m.content += part.type == ContentPart::Type::kImage ? impl_->vision->marker() : part.text;
      }
      m.parts.clear();
    }
    GENIEX_ASSIGN_OR_RETURN(ids, chat_tokens(flat, options));
  }
  GENIEX_ASSIGN_OR_RETURN(auto prompt, impl_->image_prompt(ids, images));
  return impl_->generate(prompt.keys, std::move(prompt.images), config, on_token);
}

Result<std::vector<int32_t>> Model::chat_tokens(std::span<const ChatMessage> messages,
                                                const ChatTemplateOptions& options) const {
  if (messages.empty()) return invalid_argument("chat: no messages");
  GENIEX_ASSIGN_OR_RETURN(std::string text, apply_chat_template(messages, true, options));
  // Templates usually write the BOS text themselves; add it only when they do not.
  const auto& tok = *impl_->tok;
  const bool has_bos = tok.bos() >= 0 && text.starts_with(tok.token_text(tok.bos()));
  return tokenize(text, !has_bos, true);
}

Result<Generation> Model::generate(std::string_view prompt, const GenerationConfig& config,
                                   const TokenCallback& on_token) {
  GENIEX_ASSIGN_OR_RETURN(auto ids, tokenize(prompt, config.add_special, config.parse_special));
  return generate(std::span<const int32_t>(ids), config, on_token);
}

Result<Generation> Model::generate(std::string_view prompt, std::span<const Image> images,
                                   const GenerationConfig& config, const TokenCallback& on_token) {
  if (images.empty()) return generate(prompt, config, on_token);
  Impl& m = *impl_;
  if (!m.vision) return m.no_images_error();
  GENIEX_ASSIGN_OR_RETURN(
      auto ids, m.image_text_ids(prompt, images.size(), config.add_special, config.parse_special));
  GENIEX_ASSIGN_OR_RETURN(auto p, m.image_prompt(ids, images));
  return m.generate(p.keys, std::move(p.images), config, on_token);
}

Result<std::vector<float>> Model::logits(std::span<const int32_t> tokens, int32_t first_row) {
  GENIEX_TRY(impl_->check_tokens(tokens));
  return impl_->logits(tokens, nullptr, first_row);
}

Result<std::vector<float>> Model::Impl::logits(std::span<const int32_t> tokens,
                                               std::shared_ptr<engine::PromptImages> images,
                                               int32_t first_row) {
  if (!batch) return encoder_only_error("logits");
  if (tokens.empty()) return invalid_argument("logits: no tokens");
  if (first_row < 0 || static_cast<size_t>(first_row) >= tokens.size()) {
    return invalid_argument("logits: first_row " + std::to_string(first_row) + " outside the " +
                            std::to_string(tokens.size()) + " tokens");
  }
  if (static_cast<int64_t>(tokens.size()) > n_ctx) {
    return out_of_range("logits: " + std::to_string(tokens.size()) +
                        " tokens exceed the context size " + std::to_string(n_ctx));
  }
  GENIEX_ASSIGN_OR_RETURN(
      auto req, engine::Request::create(engine::Request::Kind::kLogits, tokens, GenerationConfig{},
                                        *tok, static_cast<int32_t>(config.n_vocab)));
  req->logits_from = first_row;
  req->set_images(std::move(images));
  auto r = batch->submit(std::move(req));
  std::deque<engine::RequestEvent> events;
  while (r->wait_events(events)) events.clear();
  return r->logits_result();
}

Result<Generation> Model::generate(std::span<const int32_t> prompt, const GenerationConfig& config,
                                   const TokenCallback& on_token) {
  GENIEX_TRY(impl_->check_tokens(prompt));
  return impl_->generate(prompt, nullptr, config, on_token);
}

Result<std::vector<int32_t>> Model::Impl::image_text_ids(std::string_view prompt, size_t n_images,
                                                         bool add_special,
                                                         bool parse_special) const {
  if (!vision) return no_images_error();
  // Text between markers is tokenized on its own; each marker becomes the image token.
  const std::string& marker = vision->marker();
  std::vector<std::string_view> pieces;
  for (size_t at = 0;;) {
    const size_t hit = prompt.find(marker, at);
    pieces.push_back(prompt.substr(at, hit == std::string_view::npos ? hit : hit - at));
    if (hit == std::string_view::npos) break;
    at = hit + marker.size();
  }
  const size_t n_markers = pieces.size() - 1;
  if (n_markers != 0 && n_markers != n_images) {
    return invalid_argument("the prompt has " + std::to_string(n_markers) + " " + marker +
                            " marker(s) for " + std::to_string(n_images) +
                            " image(s) (give one per image, or none to put every image before "
                            "the text)");
  }
  tokenizer::EncodeOptions enc;
  enc.add_special = false;
  enc.parse_special = parse_special;
  std::vector<int32_t> ids;
  const int32_t image = vision->image_token();
  const tokenizer::Tokenizer& t = *tok;
  if (add_special && t.add_bos() && t.bos() >= 0) ids.push_back(t.bos());
  if (n_markers == 0) ids.insert(ids.end(), n_images, image);
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) ids.push_back(image);
    GENIEX_ASSIGN_OR_RETURN(auto part, t.encode(pieces[i], enc));
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

Result<std::vector<float>> Model::logits(std::string_view prompt, std::span<const Image> images,
                                         int32_t first_row) {
  Impl& m = *impl_;
  const auto& tok = *m.tok;
  const bool has_bos = tok.bos() >= 0 && prompt.starts_with(tok.token_text(tok.bos()));
  if (images.empty()) {
    GENIEX_ASSIGN_OR_RETURN(auto ids, tokenize(prompt, !has_bos, true));
    return logits(std::span<const int32_t>(ids), first_row);
  }
  GENIEX_ASSIGN_OR_RETURN(auto ids, m.image_text_ids(prompt, images.size(), !has_bos, true));
  GENIEX_ASSIGN_OR_RETURN(auto p, m.image_prompt(ids, images));
  return m.logits(p.keys, std::move(p.images), first_row);
}

Status Model::Impl::no_images_error() const {
  return invalid_argument("model '" + info.path +
                          "' takes no images: it is a text model (build it with the vision "
                          "model's mmproj file to give it images)");
}

Result<engine::ImagePrompt> Model::Impl::image_prompt(std::span<const int32_t> ids,
                                                      std::span<const Image> images) {
  if (!vision) return no_images_error();
  auto prepared = std::make_shared<std::vector<engine::PreparedImage>>();
  prepared->reserve(images.size());
  int64_t n_image_tokens = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    Result<engine::PreparedImage> p = vision->prepare(images[i]);
    if (!p.ok()) {
      const std::string which = images.size() > 1 ? "image " + std::to_string(i + 1) + " of " +
                                                        std::to_string(images.size()) + ": "
                                                  : std::string();
      return Status(p.status().code(), which + p.status().message());
    }
    n_image_tokens += p->n_image_tokens;
    prepared->push_back(std::move(*p));
  }
  if (static_cast<int64_t>(ids.size()) + n_image_tokens >= n_ctx) {
    return out_of_range("the prompt is " + std::to_string(ids.size() - images.size()) +
                        " text tokens and " + std::to_string(n_image_tokens) +
                        " image tokens but the context holds " + std::to_string(n_ctx) +
                        "; use fewer or smaller images, or raise the context size");
  }
  GENIEX_ASSIGN_OR_RETURN(
      engine::ImagePrompt out,
      engine::build_image_prompt(ids, vision->image_token(), *prepared, config.n_embd));
  const size_t n_images = images.size();
  // Run by the engine thread inside a step, when a prefill chunk reaches image i: the encoder
  // shares the backends with the decoder. Its activations (attention over every patch) dwarf a
  // decode step's: the units give that memory back once the image is encoded, and the image's
  // pixels go once its features exist.
  out.images->encode = [this, prepared, n_images](size_t i, std::span<float> rows) -> Status {
    engine::PreparedImage& im = (*prepared)[i];
    Result<double> ms = vision->encode(im, *scheduler, rows);
    scheduler->release_scratch();
    if (!ms.ok()) {
      const std::string which =
          n_images > 1 ? "image " + std::to_string(i + 1) + " of " + std::to_string(n_images) + ": "
                       : std::string();
      return Status(ms.status().code(), which + ms.status().message());
    }
    {
      std::lock_guard<std::mutex> lock(image_stats_mu);
      image_stats.images += 1;
      image_stats.views += static_cast<int64_t>(im.pre.views.size());
      image_stats.encode_ms += im.prepare_ms + *ms;
      image_stats.prepare_ms += im.prepare_ms;
    }
    im.pre = {};
    return {};
  };
  return out;
}

Result<Generation> Model::Impl::generate(std::span<const int32_t> prompt,
                                         std::shared_ptr<engine::PromptImages> images,
                                         const GenerationConfig& gc,
                                         const TokenCallback& on_token) {
  if (!batch) return encoder_only_error("generate");
  Impl& m = *this;
  if (gc.max_tokens < 0) {
    return invalid_argument("max_tokens must be >= 0, got " + std::to_string(gc.max_tokens));
  }
  if (prompt.empty()) return invalid_argument("the prompt is empty (no tokens)");
  if (static_cast<int64_t>(prompt.size()) >= m.n_ctx) {
    return out_of_range("the prompt is " + std::to_string(prompt.size()) +
                        " tokens but the context holds " + std::to_string(m.n_ctx) +
                        " (prompt + at least one generated token); shorten the prompt or raise "
                        "the context size");
  }
  GENIEX_ASSIGN_OR_RETURN(
      auto req, engine::Request::create(engine::Request::Kind::kGenerate, prompt, gc, *m.tok,
                                        static_cast<int32_t>(m.config.n_vocab)));
  req->set_images(std::move(images));
  auto r = m.batch->submit(std::move(req));
  // Deliver the engine's events on this thread, in order; a callback returning false cancels.
  std::deque<engine::RequestEvent> events;
  bool cancelled = false;
  std::string delivered;
  size_t delivered_tokens = 0;
  while (r->wait_events(events)) {
    for (auto& ev : events) {
      if (cancelled) break;
      if (ev.prefill_done >= 0) {
        gc.on_prefill_progress(ev.prefill_done, static_cast<int32_t>(prompt.size()));
        continue;
      }
      if (ev.logprobs && gc.on_logprobs) gc.on_logprobs(*ev.logprobs);
      delivered += ev.text;
      delivered_tokens = ev.n_tokens;
      if (!ev.text.empty() && on_token && !on_token(ev.text, ev.token)) {
        cancelled = true;
        r->request_cancel();
      }
    }
    events.clear();
  }
  GENIEX_ASSIGN_OR_RETURN(Generation gen, r->result());
  if (cancelled) {
    gen.text = std::move(delivered);
    gen.tokens.resize(std::min(gen.tokens.size(), delivered_tokens));
    if (gen.logprobs.size() > gen.tokens.size()) gen.logprobs.resize(gen.tokens.size());
    gen.stop_reason = StopReason::kCancelled;
    gen.timings.generated_tokens = static_cast<int32_t>(gen.tokens.size());
  }
  return gen;
}

}  // namespace geniex
