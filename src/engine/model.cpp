// Model: tokenization, chat templating and the generate loop (sampling, streaming, stop
// strings, cancellation, timings) over Model::Impl::eval.
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "engine/model_impl.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/stop_matcher.h"
#include "tokenizer/jinja/chat_template.h"

namespace geniex {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

sampling::SamplingParams params_of(const GenerationConfig& c) {
  sampling::SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  p.repetition_penalty = c.repetition_penalty;
  p.presence_penalty = c.presence_penalty;
  p.frequency_penalty = c.frequency_penalty;
  p.penalty_last_n = c.penalty_last_n;
  p.seed = c.seed ? *c.seed : std::random_device{}();
  return p;
}

/// Draws the first token `accept` takes (GenerationConfig::token_filter): a few draws with the
/// rejected tokens masked, then every token in logit order. `masked` is scratch space.
Result<int32_t> sample_accepted(sampling::Sampler& sampler, std::span<const float> logits,
                                std::span<const int32_t> history,
                                const std::function<bool(int32_t)>& accept,
                                std::vector<float>& masked) {
  constexpr int kDraws = 32;
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  masked.assign(logits.begin(), logits.end());
  for (int i = 0; i < kDraws; ++i) {
    auto token = sampler.sample(masked, history);
    if (!token.ok()) break;  // every token masked
    if (accept(*token)) return *token;
    masked[static_cast<size_t>(*token)] = kMasked;
  }
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (const int32_t t : order) {
    if (masked[static_cast<size_t>(t)] != kMasked && accept(t)) return t;
  }
  return invalid_argument("token_filter accepted no token of the vocabulary");
}

Result<TokenLogprobs> logprobs_of(std::span<const float> logits, int32_t token, int32_t k) {
  TokenLogprobs lp;
  GENIEX_ASSIGN_OR_RETURN(lp.chosen.logprob, sampling::logprob_of(logits, token));
  lp.chosen.token = token;
  GENIEX_ASSIGN_OR_RETURN(auto top, sampling::top_logprobs(logits, k));
  lp.top.reserve(top.size());
  for (const auto& t : top) lp.top.push_back({t.id, t.logprob});
  return lp;
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const ModelInfo& Model::info() const { return impl_->info; }

void Model::reset() {
  impl_->kv->truncate(impl_->seq, 0);
  impl_->kv->clear_prefix_cache();
}

Status Model::save_state(const std::string& path) {
  return impl_->kv->save(impl_->seq, path, impl_->state_fingerprint());
}

Status Model::load_state(const std::string& path) {
  Status s = impl_->kv->load(impl_->seq, path, impl_->state_fingerprint());
  if (!s.ok()) return s;
  return impl_->check_tokens(impl_->kv->tokens(impl_->seq));
}

std::vector<int32_t> Model::cached_tokens() const {
  const auto t = impl_->kv->tokens(impl_->seq);
  return {t.begin(), t.end()};
}

KvStats Model::kv_stats() const {
  const auto st = impl_->kv->stats();
  KvStats k;
  k.bytes_per_token = static_cast<int64_t>(impl_->kv->bytes_per_token());
  k.blocks_in_use = st.blocks_in_use;
  k.blocks_cached = st.blocks_cached;
  k.bytes_resident = st.bytes_resident;
  k.bytes_spilled =
      st.frames_spilled > 0 && st.frames > 0
          ? st.frames_spilled * (st.bytes_resident / std::max<int64_t>(1, st.frames_resident))
          : 0;
  k.prefix_hits = st.prefix_hits;
  k.cached_tokens = impl_->kv->n_tokens(impl_->seq);
  return k;
}

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

Result<std::string> Model::apply_chat_template(std::span<const ChatMessage> messages,
                                               bool add_generation_prompt) const {
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
  if (messages.empty()) return invalid_argument("chat: no messages");
  GENIEX_ASSIGN_OR_RETURN(std::string text, apply_chat_template(messages, true));
  // Templates usually write the BOS text themselves; add it only when they do not.
  const auto& tok = *impl_->tok;
  const bool has_bos = tok.bos() >= 0 && text.starts_with(tok.token_text(tok.bos()));
  GENIEX_ASSIGN_OR_RETURN(auto ids, tokenize(text, !has_bos, true));
  return generate(std::span<const int32_t>(ids), config, on_token);
}

Result<Generation> Model::generate(std::string_view prompt, const GenerationConfig& config,
                                   const TokenCallback& on_token) {
  GENIEX_ASSIGN_OR_RETURN(auto ids, tokenize(prompt, config.add_special, config.parse_special));
  return generate(std::span<const int32_t>(ids), config, on_token);
}

Result<std::vector<float>> Model::logits(std::span<const int32_t> tokens) {
  reset();
  auto out = impl_->eval(tokens, true);
  return out;
}

Result<Generation> Model::generate(std::span<const int32_t> prompt, const GenerationConfig& config,
                                   const TokenCallback& on_token) {
  const auto t_start = Clock::now();
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
      auto sampler,
      sampling::Sampler::create(params_of(config), static_cast<int32_t>(m.config.n_vocab)));
  GENIEX_ASSIGN_OR_RETURN(auto stops, sampling::StopMatcher::create(config.stop));

  Generation gen;
  gen.prompt_tokens.assign(prompt.begin(), prompt.end());
  Timings& tm = gen.timings;
  tm.prompt_tokens = static_cast<int32_t>(prompt.size());
  tm.cached_tokens = m.reuse_prefix(prompt);
  GENIEX_ASSIGN_OR_RETURN(std::vector<float> prompt_logits,
                          m.eval(prompt.subspan(static_cast<size_t>(tm.cached_tokens)), false));
  std::span<const float> logits(prompt_logits);
  tm.prompt_ms = ms_since(t_start);
  const auto t_gen = Clock::now();

  tokenizer::DecodeOptions dopts;
  auto decoder = m.tok->stream_decoder(dopts);
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  bool done = false;
  // Shows `piece` through the stop matcher; false when generation must end.
  auto emit = [&](const std::string& piece, int32_t token) {
    auto fr = stops.feed(piece);
    if (!fr.emit.empty()) {
      gen.text += fr.emit;
      if (on_token && !on_token(fr.emit, token)) {
        gen.stop_reason = StopReason::kCancelled;
        return false;
      }
    }
    if (fr.stopped) {
      gen.stop_reason = StopReason::kStopString;
      return false;
    }
    return true;
  };
  if (config.max_tokens == 0) {
    gen.stop_reason = StopReason::kMaxTokens;
    done = true;
  }
  std::vector<float> masked;  // token_filter scratch
  while (!done) {
    int32_t token = -1;
    if (config.token_filter) {
      GENIEX_ASSIGN_OR_RETURN(
          token, sample_accepted(sampler, logits, history, config.token_filter, masked));
    } else {
      GENIEX_ASSIGN_OR_RETURN(token, sampler.sample(logits, history));
    }
    if (gen.tokens.empty()) tm.ttft_ms = ms_since(t_start);
    gen.tokens.push_back(token);
    if (config.logprobs >= 0) {
      GENIEX_ASSIGN_OR_RETURN(TokenLogprobs lp, logprobs_of(logits, token, config.logprobs));
      if (config.on_logprobs) config.on_logprobs(lp);
      gen.logprobs.push_back(std::move(lp));
    }
    history.push_back(token);
    if (!config.ignore_eos && m.tok->is_eog(token)) {
      gen.stop_reason = StopReason::kEndOfGeneration;
      break;
    }
    GENIEX_ASSIGN_OR_RETURN(std::string piece, decoder.feed(token));
    if (!emit(piece, token)) break;
    if (static_cast<int32_t>(gen.tokens.size()) >= config.max_tokens) {
      gen.stop_reason = StopReason::kMaxTokens;
      break;
    }
    if (m.kv->n_tokens(m.seq) >= n_ctx) {
      if (m.overflow != ContextOverflow::kShift) {
        gen.stop_reason = StopReason::kContextFull;
        break;
      }
      GENIEX_TRY(m.shift_context());
    }
    GENIEX_ASSIGN_OR_RETURN(logits, m.decode_one(token));
  }
  // Text still held back by the decoder and the stop matcher, unless we stopped early.
  if (gen.stop_reason != StopReason::kCancelled && gen.stop_reason != StopReason::kStopString) {
    const int32_t last = gen.tokens.empty() ? -1 : gen.tokens.back();
    if (emit(decoder.flush(), last)) {
      std::string rest = stops.flush();
      if (!rest.empty()) {
        gen.text += rest;
        if (on_token && !on_token(rest, last)) gen.stop_reason = StopReason::kCancelled;
      }
    }
  }
  tm.generated_tokens = static_cast<int32_t>(gen.tokens.size());
  tm.generation_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_gen).count();
  return gen;
}

}  // namespace geniex
