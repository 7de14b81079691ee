// Model: tokenization, chat templating and the generate loop (sampling, streaming, stop
// strings, cancellation, timings) over Model::Impl::eval.
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

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

void Model::reset() { impl_->batch->reset(); }

Status Model::save_state(const std::string& path) {
  Impl& m = *impl_;
  return m.batch->with_last_sequence(
      [&](runtime::KvManager::SeqId seq) { return m.kv->save(seq, path, m.state_fingerprint()); });
}

Status Model::load_state(const std::string& path) {
  Impl& m = *impl_;
  return m.batch->with_idle_sequence([&](runtime::KvManager::SeqId seq) {
    GENIEX_TRY(m.kv->load(seq, path, m.state_fingerprint()));
    Status s = m.check_tokens(m.kv->tokens(seq));
    if (!s.ok()) m.kv->truncate(seq, 0);
    return s;
  });
}

std::vector<int32_t> Model::cached_tokens() const {
  std::vector<int32_t> out;
  Impl& m = *impl_;
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
  (void)m.batch->with_last_sequence([&](runtime::KvManager::SeqId seq) {
    const auto st = m.kv->stats();
    k.bytes_per_token = static_cast<int64_t>(m.kv->bytes_per_token());
    k.blocks_in_use = st.blocks_in_use;
    k.blocks_cached = st.blocks_cached;
    k.bytes_resident = st.bytes_resident;
    const int64_t frame = st.frames_resident > 0 ? st.bytes_resident / st.frames_resident : 0;
    k.bytes_spilled = st.frames_spilled * frame;
    k.prefix_hits = st.prefix_hits;
    k.cached_tokens = m.kv->n_tokens(seq);
    return Status{};
  });
  return k;
}

EngineStats Model::engine_stats() const {
  const auto s = impl_->batch->stats();
  EngineStats e{s.steps, s.batched_tokens, s.active, s.queued, 0, 0};
  impl_->batch->exclusive([&] {
    e.fallbacks = impl_->scheduler->fallbacks();
    e.boundary_bytes = impl_->scheduler->boundary_bytes();
  });
  return e;
}

std::string Model::explain_placement() const {
  std::string out;
  Impl& m = *impl_;
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
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      return invalid_argument("chat message role '" + m.role +
                              "' (expected system, user or assistant)");
    }
    in.messages.push_back({{"role", m.role}, {"content", m.content}});
  }
  in.add_generation_prompt = add_generation_prompt;
  const auto& tok = *impl_->tok;
  if (tok.bos() >= 0) in.bos_token = tok.token_text(tok.bos());
  if (tok.eos() >= 0) in.eos_token = tok.token_text(tok.eos());
  return jinja::render_chat_template(*impl_->chat_template, in);
}

Result<Generation> Model::chat(std::span<const ChatMessage> messages,
                               const GenerationConfig& config, const TokenCallback& on_token) {
  GENIEX_ASSIGN_OR_RETURN(auto ids, chat_tokens(messages));
  return generate(std::span<const int32_t>(ids), config, on_token);
}

Result<std::vector<int32_t>> Model::chat_tokens(std::span<const ChatMessage> messages) const {
  if (messages.empty()) return invalid_argument("chat: no messages");
  GENIEX_ASSIGN_OR_RETURN(std::string text, apply_chat_template(messages, true));
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

Result<std::vector<float>> Model::logits(std::span<const int32_t> tokens, int32_t first_row) {
  Impl& m = *impl_;
  if (tokens.empty()) return invalid_argument("logits: no tokens");
  if (first_row < 0 || static_cast<size_t>(first_row) >= tokens.size()) {
    return invalid_argument("logits: first_row " + std::to_string(first_row) + " outside the " +
                            std::to_string(tokens.size()) + " tokens");
  }
  GENIEX_TRY(m.check_tokens(tokens));
  if (static_cast<int64_t>(tokens.size()) > m.n_ctx) {
    return out_of_range("logits: " + std::to_string(tokens.size()) +
                        " tokens exceed the context size " + std::to_string(m.n_ctx));
  }
  GENIEX_ASSIGN_OR_RETURN(
      auto req, engine::Request::create(engine::Request::Kind::kLogits, tokens, GenerationConfig{},
                                        *m.tok, static_cast<int32_t>(m.config.n_vocab)));
  req->logits_from = first_row;
  auto r = m.batch->submit(std::move(req));
  std::deque<engine::RequestEvent> events;
  while (r->wait_events(events)) events.clear();
  return r->logits_result();
}

Result<Generation> Model::generate(std::span<const int32_t> prompt, const GenerationConfig& config,
                                   const TokenCallback& on_token) {
  Impl& m = *impl_;
  if (config.max_tokens < 0) {
    return invalid_argument("max_tokens must be >= 0, got " + std::to_string(config.max_tokens));
  }
  if (prompt.empty()) return invalid_argument("the prompt is empty (no tokens)");
  GENIEX_TRY(m.check_tokens(prompt));
  const int32_t n_ctx = m.n_ctx;
  if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
    return out_of_range("the prompt is " + std::to_string(prompt.size()) +
                        " tokens but the context holds " + std::to_string(n_ctx) +
                        " (prompt + at least one generated token); shorten the prompt or raise "
                        "the context size");
  }
  GENIEX_ASSIGN_OR_RETURN(
      auto req, engine::Request::create(engine::Request::Kind::kGenerate, prompt, config, *m.tok,
                                        static_cast<int32_t>(m.config.n_vocab)));
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
        config.on_prefill_progress(ev.prefill_done, static_cast<int32_t>(prompt.size()));
        continue;
      }
      if (ev.logprobs && config.on_logprobs) config.on_logprobs(*ev.logprobs);
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
