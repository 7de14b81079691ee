// Model::Impl::eval — one forward step per batch of tokens over the KV cache.
#include <algorithm>
#include <numeric>

#include "engine/model_impl.h"
#include "graph/run_reference.h"
#include "models/forward_graph.h"

namespace geniex {
namespace {

// Binds what one forward step over the cache reads and writes: the batch's tokens and positions
// (slot i holds position i, so the positions are also the slots), the cache slots' positions,
// the output rows, every weight, every layer's K/V cache and the logits.
void bind_step(const models::ForwardGraph& fg, runtime::KvCache& cache,
               std::span<const int32_t> tokens, std::span<const int32_t> pos,
               std::span<const int32_t> kv_pos, std::span<const int32_t> rows,
               std::span<float> logits, graph::Bindings& b) {
  b.bind_input(fg.token_ids, tokens);
  b.bind_input(fg.positions, pos);
  b.bind_input(fg.kv_slots, pos);
  b.bind_input(fg.kv_pos, kv_pos);
  b.bind_input(fg.output_rows, rows);
  models::bind_forward_weights(fg, b);
  for (size_t il = 0; il < fg.k_cache.size(); ++il) {
    b.bind_state(fg.k_cache[il], cache.type(), cache.k(il));
    b.bind_state(fg.v_cache[il], cache.type(), cache.v(il));
  }
  b.bind_output(fg.logits, logits);
}

}  // namespace

Status Model::Impl::check_tokens(std::span<const int32_t> tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= config.n_vocab) {
      return invalid_argument("token id " + std::to_string(tokens[i]) + " at index " +
                              std::to_string(i) + " is outside the vocabulary [0, " +
                              std::to_string(config.n_vocab) + ")");
    }
  }
  return {};
}

int32_t Model::Impl::reuse_prefix(std::span<const int32_t> prompt) {
  size_t p = 0;
  while (p < cached.size() && p < prompt.size() && cached[p] == prompt[p]) ++p;
  if (p == prompt.size() && p > 0) --p;  // the last prompt token must run to give logits
  cached.resize(p);
  cache->truncate(static_cast<int32_t>(p));
  return static_cast<int32_t>(p);
}

Result<std::vector<float>> Model::Impl::eval(std::span<const int32_t> tokens, bool all_logits) {
  if (tokens.empty()) return invalid_argument("eval: no tokens");
  GENIEX_TRY(check_tokens(tokens));
  const int32_t start = cache->n_used();
  if (static_cast<int64_t>(start) + static_cast<int64_t>(tokens.size()) > cache->capacity()) {
    return out_of_range("context is full: " + std::to_string(start) + " cached + " +
                        std::to_string(tokens.size()) + " new tokens exceed the context size " +
                        std::to_string(cache->capacity()));
  }
  const size_t n_vocab = config.n_vocab;
  std::vector<float> out(all_logits ? tokens.size() * n_vocab : n_vocab);
  std::vector<int32_t> pos, kv_pos;
  auto rollback = [&](Status s) {
    cache->truncate(start);
    cached.resize(static_cast<size_t>(start));
    return s;
  };
  for (size_t off = 0; off < tokens.size(); off += static_cast<size_t>(n_batch)) {
    const auto t =
        static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(n_batch), tokens.size() - off));
    const int32_t n_past = cache->n_used();
    const bool last_chunk = off + static_cast<size_t>(t) == tokens.size();
    models::ForwardSpec spec;
    spec.n_tokens = t;
    spec.n_kv = n_past + t;
    spec.kv_type = cache->type();
    spec.n_outputs = all_logits ? t : 1;
    auto fg = models::build_forward_graph(config, weights, spec);
    if (!fg.ok()) return rollback(fg.status());
    GENIEX_TRY(cache->append(t));

    pos.resize(static_cast<size_t>(t));
    std::iota(pos.begin(), pos.end(), n_past);
    kv_pos.resize(static_cast<size_t>(n_past + t));
    std::iota(kv_pos.begin(), kv_pos.end(), 0);
    std::vector<int32_t> rows(static_cast<size_t>(spec.n_outputs));
    std::iota(rows.begin(), rows.end(), all_logits ? 0 : t - 1);
    std::vector<float> step_logits;
    std::span<float> dst;
    if (all_logits) {
      dst = std::span<float>(out).subspan(off * n_vocab, static_cast<size_t>(t) * n_vocab);
    } else if (last_chunk) {
      dst = std::span<float>(out);
    } else {
      step_logits.resize(n_vocab);
      dst = std::span<float>(step_logits);
    }

    graph::Bindings b;
    bind_step(*fg, *cache, tokens.subspan(off, static_cast<size_t>(t)), pos, kv_pos, rows, dst, b);
    Status s = scheduler->run(fg->graph, b);
    if (!s.ok()) return rollback(s);
    cached.insert(cached.end(), tokens.begin() + static_cast<std::ptrdiff_t>(off),
                  tokens.begin() + static_cast<std::ptrdiff_t>(off + static_cast<size_t>(t)));
  }
  return out;
}

Result<std::span<const float>> Model::Impl::decode_one(int32_t token) {
  GENIEX_TRY(check_tokens(std::span<const int32_t>(&token, 1)));
  const int32_t n_past = cache->n_used();
  if (n_past + 1 > cache->capacity()) {
    return out_of_range("context is full: " + std::to_string(n_past) +
                        " cached tokens fill the context size " +
                        std::to_string(cache->capacity()));
  }
  // Graphs attend over a bucket of slots (empty ones have position -1 and are skipped), so one
  // graph, its placement and its memory plan serve 256 consecutive steps.
  constexpr int32_t kBucket = 256;
  const int32_t bucket =
      std::min(cache->capacity(), (n_past + 1 + kBucket - 1) / kBucket * kBucket);
  if (!decode_step || decode_step->bucket != bucket) {
    auto step = std::make_unique<DecodeStep>();
    models::ForwardSpec spec;
    spec.n_tokens = 1;
    spec.n_kv = bucket;
    spec.kv_type = cache->type();
    spec.n_outputs = 1;
    GENIEX_ASSIGN_OR_RETURN(step->fg, models::build_forward_graph(config, weights, spec));
    step->bucket = bucket;
    step->kv_pos.assign(static_cast<size_t>(bucket), -1);
    step->logits.resize(config.n_vocab);
    bind_step(step->fg, *cache, step->token, step->pos, step->kv_pos, step->rows, step->logits,
              step->bindings);
    decode_step = std::move(step);
  }
  DecodeStep& st = *decode_step;
  st.token[0] = token;
  st.pos[0] = n_past;
  for (int32_t i = 0; i < bucket; ++i) st.kv_pos[static_cast<size_t>(i)] = i <= n_past ? i : -1;
  GENIEX_TRY(cache->append(1));
  Status s = scheduler->run(st.fg.graph, st.bindings);
  if (!s.ok()) {
    cache->truncate(n_past);
    return s;
  }
  cached.push_back(token);
  return std::span<const float>(st.logits);
}

}  // namespace geniex
