// BatchEngine: admission into sequence slots, one batched step at a time, sampling.
#include "engine/batch_engine.h"

#include <algorithm>

namespace geniex::engine {
namespace {

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

BatchEngine::BatchEngine(runtime::KvManager& kv, StepRunner& runner, BatchEngineOptions options)
    : kv_(kv), runner_(runner), opt_(std::move(options)) {
  for (int32_t i = 0; i < kv_.spec().n_seq_max; ++i) {
    auto seq = kv_.open_sequence();
    if (!seq.ok()) break;  // create() sized the manager for n_seq_max: cannot happen
    slots_.push_back(Slot{*seq, nullptr, 0});
  }
  thread_ = std::thread([this] { loop(); });
}

BatchEngine::~BatchEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<Request> BatchEngine::submit(std::unique_ptr<Request> r) {
  std::shared_ptr<Request> sp(std::move(r));
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(sp);
    stats_.queued = static_cast<int32_t>(queue_.size());
  }
  cv_.notify_all();
  return sp;
}

int BatchEngine::pick_slot(const Request& r) const {
  int best = -1, lru = -1;
  size_t best_len = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.req) continue;
    if (lru < 0 || s.last_use < slots_[static_cast<size_t>(lru)].last_use)
      lru = static_cast<int>(i);
    if (r.kind != Request::Kind::kGenerate) continue;
    const size_t n = common_prefix(kv_.tokens(s.seq), r.prompt);
    if (n > best_len) {
      best_len = n;
      best = static_cast<int>(i);
    }
  }
  return best >= 0 ? best : lru;
}

void BatchEngine::admit() {
  reap();
  while (!queue_.empty()) {
    const int slot = pick_slot(*queue_.front());
    if (slot < 0) break;
    auto r = queue_.front();
    queue_.pop_front();
    Slot& s = slots_[static_cast<size_t>(slot)];
    s.req = r;
    s.last_use = ++clock_;
    r->slot = slot;
    if (r->kind == Request::Kind::kGenerate) {
      r->set_cached(kv_.reuse_prefix(s.seq, r->prompt));
    } else {
      kv_.truncate(s.seq, 0);
      r->set_cached(0);
    }
  }
  stats_.queued = static_cast<int32_t>(queue_.size());
}

void BatchEngine::reap() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].req && slots_[i].req->done()) release(static_cast<int>(i));
  }
}

void BatchEngine::release(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.req.reset();
  s.last_use = ++clock_;
  last_slot_ = slot;
}

void BatchEngine::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] {
      if (stop_) return true;
      for (const Slot& s : slots_) {
        if (s.req) return true;
      }
      return !queue_.empty();
    });
    if (stop_) break;
    admit();
    std::vector<std::shared_ptr<Request>> reqs;
    for (const Slot& s : slots_) {
      if (s.req && !s.req->done()) reqs.push_back(s.req);
    }
    lk.unlock();
    const int32_t n = step(reqs);
    lk.lock();
    if (n > 0) {
      ++stats_.steps;
      stats_.batched_tokens += n;
    }
    int active = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (!slots_[i].req) continue;
      if (slots_[i].req->done()) {
        release(static_cast<int>(i));
      } else {
        ++active;
      }
    }
    stats_.active = active;
  }
  const Status gone = internal_error("the model was destroyed while the request was pending");
  for (auto& r : queue_) r->fail(gone);
  queue_.clear();
  for (Slot& s : slots_) {
    if (s.req) s.req->fail(gone);
    s.req.reset();
  }
}

int32_t BatchEngine::step(const std::vector<std::shared_ptr<Request>>& reqs) {
  std::lock_guard<std::mutex> compute(compute_mu_);
  std::vector<StepItem> items;
  std::vector<Request*> owner;
  std::vector<int32_t> next(reqs.size());
  items.reserve(reqs.size());
  int32_t budget = opt_.n_batch;
  // Decode tokens of generating requests first: every running stream advances each step.
  for (size_t i = 0; i < reqs.size(); ++i) {
    Request& r = *reqs[i];
    if (r.cancel_requested()) {
      r.finish(StopReason::kCancelled);
      continue;
    }
    if (r.n_evaluated < static_cast<int32_t>(r.prompt.size())) continue;  // still prefilling
    const auto seq = slots_[static_cast<size_t>(r.slot)].seq;
    if (kv_.n_tokens(seq) >= opt_.n_ctx) {
      auto room = opt_.on_context_full ? opt_.on_context_full(seq) : Result<bool>(false);
      if (!room.ok()) {
        r.fail(room.status());
        continue;
      }
      if (!*room) {
        r.finish(StopReason::kContextFull);
        continue;
      }
    }
    next[i] = r.next_token();
    items.push_back(StepItem{seq, std::span<const int32_t>(&next[i], 1), 1});
    owner.push_back(&r);
    --budget;
  }
  // Then prefill chunks of new prompts, oldest first, in what is left of the step (at least
  // two tokens, so a prompt is never fed one token at a time behind many decoders).
  budget = std::max(budget, 2);
  for (auto& rp : reqs) {
    Request& r = *rp;
    const auto n_prompt = static_cast<int32_t>(r.prompt.size());
    if (r.done() || r.n_evaluated >= n_prompt || budget <= 0) continue;
    const int32_t left = n_prompt - r.n_evaluated;
    int32_t chunk = std::min(budget, left);
    // No 1-token prefill chunks out of longer prompts: a single row takes the GEMV kernels,
    // which round differently from the GEMM a full prefill uses.
    if (left - chunk == 1) --chunk;
    if (chunk == 1 && left > 1) chunk = 0;
    if (chunk <= 0) continue;
    const auto seq = slots_[static_cast<size_t>(r.slot)].seq;
    // Logits requests want rows from logits_from on; a chunk before that still yields its
    // last row (a step has at least one output), which delivery drops.
    int32_t n_outputs = 1;
    if (r.kind == Request::Kind::kLogits) {
      n_outputs = std::clamp(r.n_evaluated + chunk - r.logits_from, 1, chunk);
    }
    StepItem item{seq,
                  std::span<const int32_t>(r.prompt).subspan(static_cast<size_t>(r.n_evaluated),
                                                             static_cast<size_t>(chunk)),
                  n_outputs};
    if (r.images) {
      // The images this chunk reaches are encoded now (once; cached prefixes never get here).
      if (Status st = r.images->ensure(r.n_evaluated, r.n_evaluated + chunk); !st.ok()) {
        r.fail(st);
        continue;
      }
      item.embd_rows = std::span<const int32_t>(r.images->rows)
                           .subspan(static_cast<size_t>(r.n_evaluated), static_cast<size_t>(chunk));
      item.embd_table = r.images->table;
    }
    items.push_back(item);
    owner.push_back(&r);
    budget -= chunk;
  }
  if (items.empty()) return 0;
  auto logits = runner_.run(items);
  if (!logits.ok()) {
    for (Request* r : owner) r->fail(logits.status());
    return 0;
  }
  const size_t n_vocab = logits->size() / [&] {
    size_t rows = 0;
    for (const auto& it : items) rows += static_cast<size_t>(it.n_outputs);
    return rows;
  }();
  size_t row = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    Request& r = *owner[k];
    const auto n_rows = static_cast<size_t>(items[k].n_outputs);
    const auto rows = logits->subspan(row * n_vocab, n_rows * n_vocab);
    row += n_rows;
    const bool prefill = r.n_evaluated < static_cast<int32_t>(r.prompt.size());
    if (prefill) {
      const int32_t chunk_end = r.n_evaluated + static_cast<int32_t>(items[k].tokens.size());
      r.n_evaluated = chunk_end;
      const bool complete = r.n_evaluated == static_cast<int32_t>(r.prompt.size());
      r.on_prefill_progress();
      if (r.kind == Request::Kind::kLogits) {
        // Keep the rows of positions >= logits_from (the first rows may precede it).
        const auto keep = static_cast<size_t>(
            std::clamp(chunk_end - r.logits_from, 0, static_cast<int32_t>(n_rows)));
        r.on_all_logits(rows.subspan((n_rows - keep) * n_vocab));
        if (complete) r.finish(StopReason::kMaxTokens);
        continue;
      }
      if (!complete) continue;
    }
    Status s = r.on_logits(rows);
    if (!s.ok()) r.fail(s);
  }
  int32_t tokens = 0;
  for (const auto& it : items) tokens += static_cast<int32_t>(it.tokens.size());
  return tokens;
}

Status BatchEngine::with_last_sequence(const std::function<Status(runtime::KvManager::SeqId)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> compute(compute_mu_);
  reap();
  return fn(slots_[static_cast<size_t>(last_slot_)].seq);
}

Status BatchEngine::with_idle_sequence(const std::function<Status(runtime::KvManager::SeqId)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> compute(compute_mu_);
  reap();
  int lru = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].req) continue;
    if (lru < 0 || slots_[i].last_use < slots_[static_cast<size_t>(lru)].last_use) {
      lru = static_cast<int>(i);
    }
  }
  if (lru < 0) return resource_exhausted("every sequence slot is busy");
  Status s = fn(slots_[static_cast<size_t>(lru)].seq);
  slots_[static_cast<size_t>(lru)].last_use = ++clock_;
  last_slot_ = lru;
  return s;
}

void BatchEngine::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> compute(compute_mu_);
  reap();
  for (const Slot& s : slots_) {
    if (!s.req) kv_.truncate(s.seq, 0);
  }
  kv_.clear_prefix_cache();
}

void BatchEngine::exclusive(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> compute(compute_mu_);
  reap();
  fn();
}

BatchEngineStats BatchEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BatchEngineStats s = stats_;
  s.active = 0;
  for (const Slot& slot : slots_) s.active += slot.req && !slot.req->done() ? 1 : 0;
  s.queued = static_cast<int32_t>(queue_.size());
  return s;
}

}  // namespace geniex::engine
