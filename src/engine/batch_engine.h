// BatchEngine: continuous batching. One engine thread owns every forward pass: each step it
// admits queued requests into free sequence slots (reusing the longest cached prefix), then runs
// ONE batched forward pass holding a decode token of every generating request plus prefill
// chunks of new prompts (up to n_batch tokens in all, so long prompts are split across steps and
// running streams keep flowing), then samples each request's next token. Requests join and
// leave between steps; a cancelled request leaves at the next step and its slot is free at once.
// Finished sequences stay cached in their slot, so a follow-up request (the next chat turn)
// whose prompt extends one of them evaluates only its new tokens.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/request.h"
#include "engine/step_runner.h"
#include "runtime/kv_manager.h"

namespace geniex::engine {

struct BatchEngineOptions {
  int32_t n_batch = 512;  ///< tokens per step (decode tokens + prefill chunks)
  int32_t n_ctx = 4096;   ///< per sequence
  /// Called when a generating sequence fills n_ctx; returns false to stop the request with
  /// kContextFull, true after making room (context shift).
  std::function<Result<bool>(runtime::KvManager::SeqId)> on_context_full;
};

struct BatchEngineStats {
  int64_t steps = 0;
  int64_t batched_tokens = 0;  ///< tokens evaluated, over all steps
  int32_t active = 0;          ///< requests holding a slot
  int32_t queued = 0;          ///< waiting for a slot
};

class BatchEngine {
 public:
  BatchEngine(runtime::KvManager& kv, StepRunner& runner, BatchEngineOptions options);
  ~BatchEngine();  ///< fails queued and running requests with kCancelled-like errors, joins
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;

  /// Queues the request; the engine thread picks it up at the next step.
  std::shared_ptr<Request> submit(std::unique_ptr<Request> r);

  /// Runs `fn` while no step runs, with the sequence of the most recently used slot (the one a
  /// single-user caller thinks of as "the" context). Exclusive with every step.
  Status with_last_sequence(const std::function<Status(runtime::KvManager::SeqId)>& fn);
  /// Runs `fn` with the least recently used idle slot, which becomes the last one.
  Status with_idle_sequence(const std::function<Status(runtime::KvManager::SeqId)>& fn);
  /// Empties every idle slot (and the prefix cache).
  void reset();
  /// Runs `fn` while no step runs.
  void exclusive(const std::function<void()>& fn);
  [[nodiscard]] BatchEngineStats stats() const;

 private:
  struct Slot {
    runtime::KvManager::SeqId seq = 0;
    std::shared_ptr<Request> req;
    uint64_t last_use = 0;
  };
  void loop();
  void admit();
  /// One forward pass over the requests; returns the tokens it evaluated.
  int32_t step(const std::vector<std::shared_ptr<Request>>& reqs);
  int pick_slot(const Request& r) const;
  void release(int slot);
  /// Frees the slots of finished requests (under mu_, no step running on them).
  void reap();

  runtime::KvManager& kv_;
  StepRunner& runner_;
  BatchEngineOptions opt_;
  std::vector<Slot> slots_;
  int last_slot_ = 0;
  uint64_t clock_ = 0;

  mutable std::mutex mu_;  ///< queue, slots, stats
  std::mutex compute_mu_;  ///< held while a step runs (and by exclusive operations)
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Request>> queue_;
  bool stop_ = false;
  BatchEngineStats stats_;
  std::thread thread_;
};

}  // namespace geniex::engine
