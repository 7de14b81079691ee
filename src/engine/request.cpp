// Request: sampling, streaming and stopping for one generation, and its event queue.
#include "engine/request.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "engine/sampling/logprobs.h"

namespace geniex::engine {
namespace {

sampling::SamplingParams params_of(const GenerationConfig& c, uint64_t seed) {
  sampling::SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  p.repetition_penalty = c.repetition_penalty;
  p.presence_penalty = c.presence_penalty;
  p.frequency_penalty = c.frequency_penalty;
  p.penalty_last_n = c.penalty_last_n;
  p.seed = seed;
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
  const auto by_logit = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  const sampling::SamplingParams& sp = sampler.params();
  if (sp.temperature == 0.0f && sp.repetition_penalty == 1.0f && sp.presence_penalty == 0.0f &&
      sp.frequency_penalty == 0.0f) {
    // Greedy without penalties: candidates in logit order (the sampler's argmax order), sorted
    // only as far as needed (a window of 64, then 512, ...) instead of one argmax pass over the
    // vocabulary per rejected token.
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    size_t done = 0;
    for (size_t window = 64; done < order.size(); window *= 8) {
      const size_t end = std::min(order.size(), done + window);
      std::partial_sort(order.begin() + static_cast<std::ptrdiff_t>(done),
                        order.begin() + static_cast<std::ptrdiff_t>(end), order.end(), by_logit);
      for (; done < end; ++done) {
        const int32_t t = order[done];
        if (logits[static_cast<size_t>(t)] == kMasked) break;
        if (accept(t)) return t;
      }
      if (done < end) break;  // the rest is masked
    }
    return invalid_argument("token_filter accepted no token of the vocabulary");
  }
  masked.assign(logits.begin(), logits.end());
  for (int i = 0; i < kDraws; ++i) {
    auto token = sampler.sample(masked, history);
    if (!token.ok()) break;  // every token masked
    if (accept(*token)) return *token;
    masked[static_cast<size_t>(*token)] = kMasked;
  }
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), by_logit);
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

double ms_between(Request::Clock::time_point a, Request::Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Result<std::unique_ptr<Request>> Request::create(Kind kind, std::span<const int32_t> prompt,
                                                 const GenerationConfig& config,
                                                 const tokenizer::Tokenizer& tok, int32_t n_vocab) {
  std::unique_ptr<Request> r(new Request());
  r->kind = kind;
  r->config = config;
  r->prompt.assign(prompt.begin(), prompt.end());
  r->tok_ = &tok;
  if (kind == Kind::kGenerate) {
    // std::random_device gives 32 bits; the seed is reported so a random run can be repeated.
    r->gen_.seed = config.seed ? *config.seed : std::random_device{}();
    GENIEX_ASSIGN_OR_RETURN(auto sampler,
                            sampling::Sampler::create(params_of(config, r->gen_.seed), n_vocab));
    r->sampler_.emplace(std::move(sampler));
    GENIEX_ASSIGN_OR_RETURN(auto stops, sampling::StopMatcher::create(config.stop));
    r->stops_.emplace(std::move(stops));
    tokenizer::DecodeOptions decode;
    decode.render_special = config.render_special;
    r->decoder_.emplace(tok.stream_decoder(decode));
    r->history_ = r->prompt;
    if (!config.json_schema.empty()) {
      GENIEX_ASSIGN_OR_RETURN(json_schema::Schema schema, json_schema::compile(config.json_schema));
      r->schema_ = std::make_shared<const json_schema::Schema>(std::move(schema));
      r->json_.emplace(*r->schema_);
    }
  }
  r->gen_.prompt_tokens = r->prompt;
  r->gen_.timings.prompt_tokens = static_cast<int32_t>(r->prompt.size());
  return r;
}

Status PromptImages::ensure(int32_t begin, int32_t end) {
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& sl = slots[i];
    if (sl.encoded || sl.end_pos <= begin || sl.first_pos >= end) continue;
    if (!encode) return internal_error("image prompt: no encoder for image " + std::to_string(i));
    const std::span<float> out(table.data() + static_cast<size_t>(sl.first_row) * n_embd,
                               static_cast<size_t>(sl.n_rows) * n_embd);
    GENIEX_TRY(encode(i, out));
    sl.encoded = true;
  }
  return {};
}

void Request::set_images(std::shared_ptr<PromptImages> imgs) {
  images = std::move(imgs);
  if (!images) return;
  if (kind == Kind::kGenerate) history_ = images->ids;
  gen_.prompt_tokens = images->ids;
}

void Request::on_prefill_progress() {
  if (!config.on_prefill_progress) return;
  RequestEvent ev;
  ev.prefill_done = n_evaluated;
  push(std::move(ev));
}

void Request::push(RequestEvent ev) {
  ev.n_tokens = gen_.tokens.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_one();
}

// Shows `piece` through the stop matcher; the event also carries the token's log-probabilities.
void Request::emit(std::string piece, int32_t token) {
  auto fr = stops_->feed(piece);
  gen_.text += fr.emit;
  if (!fr.emit.empty() || pending_logprobs_) {
    RequestEvent ev;
    ev.text = std::move(fr.emit);
    ev.token = token;
    ev.logprobs = std::move(pending_logprobs_);
    pending_logprobs_.reset();
    push(std::move(ev));
  }
  if (fr.stopped) finish(StopReason::kStopString);
}

Status Request::on_logits(std::span<const float> logits) {
  auto& tm = gen_.timings;
  if (gen_.tokens.empty()) {
    t_first_token = Clock::now();
    tm.prompt_ms = ms_between(t_start, t_first_token);
  }
  if (config.max_tokens == 0) {
    finish(StopReason::kMaxTokens);
    return {};
  }
  int32_t token = -1;
  if (json_) {
    // The schema first (it may advance only for the token generated), then the caller's filter.
    const std::function<bool(int32_t)> accept = [this](int32_t t) {
      json_schema::Matcher next = *json_;
      if (tok_->is_eog(t)) {
        if (!json_->complete()) return false;
      } else {
        const std::string piece = tok_->token_to_piece(t, false);
        if (piece.empty() || !next.feed(piece)) return false;
      }
      if (config.token_filter && !config.token_filter(t)) return false;
      *json_ = std::move(next);
      return true;
    };
    GENIEX_ASSIGN_OR_RETURN(token, sample_accepted(*sampler_, logits, history_, accept, masked_));
  } else if (config.token_filter) {
    GENIEX_ASSIGN_OR_RETURN(
        token, sample_accepted(*sampler_, logits, history_, config.token_filter, masked_));
  } else {
    GENIEX_ASSIGN_OR_RETURN(token, sampler_->sample(logits, history_));
  }
  if (gen_.tokens.empty()) tm.ttft_ms = ms_between(t_start, Clock::now());
  gen_.tokens.push_back(token);
  if (config.logprobs >= 0) {
    GENIEX_ASSIGN_OR_RETURN(TokenLogprobs lp, logprobs_of(logits, token, config.logprobs));
    gen_.logprobs.push_back(lp);
    pending_logprobs_ = std::move(lp);
  }
  history_.push_back(token);
  if (!config.ignore_eos && tok_->is_eog(token)) {
    if (pending_logprobs_) emit("", token);
    finish(StopReason::kEndOfGeneration);
    return {};
  }
  GENIEX_ASSIGN_OR_RETURN(std::string piece, decoder_->feed(token));
  emit(std::move(piece), token);
  if (done_) return {};
  if (static_cast<int32_t>(gen_.tokens.size()) >= config.max_tokens) {
    finish(StopReason::kMaxTokens);
    return {};
  }
  next_token_ = token;
  return {};
}

void Request::on_all_logits(std::span<const float> rows) {
  all_logits_.insert(all_logits_.end(), rows.begin(), rows.end());
}

void Request::finish(StopReason reason) {
  if (done_) return;
  done_ = true;
  if (kind == Kind::kGenerate) {
    gen_.stop_reason = reason;
    if (reason != StopReason::kCancelled && reason != StopReason::kStopString) {
      const int32_t last = gen_.tokens.empty() ? -1 : gen_.tokens.back();
      auto fr = stops_->feed(decoder_->flush());
      std::string rest = fr.emit;
      if (fr.stopped) {
        gen_.stop_reason = StopReason::kStopString;
      } else {
        rest += stops_->flush();
      }
      if (!rest.empty()) {
        gen_.text += rest;
        RequestEvent ev;
        ev.text = std::move(rest);
        ev.token = last;
        push(std::move(ev));
      }
    }
    auto& tm = gen_.timings;
    tm.generated_tokens = static_cast<int32_t>(gen_.tokens.size());
    if (!gen_.tokens.empty()) tm.generation_ms = ms_between(t_first_token, Clock::now());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }
  cv_.notify_one();
}

void Request::fail(Status s) {
  error_ = std::move(s);
  finish(StopReason::kCancelled);
}

bool Request::wait_events(std::deque<RequestEvent>& out) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !events_.empty() || finished_; });
  out.swap(events_);
  events_.clear();
  return !(finished_ && out.empty());
}

Result<Generation> Request::result() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  return gen_;
}

Result<std::vector<float>> Request::logits_result() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  return std::move(all_logits_);
}

}  // namespace geniex::engine
