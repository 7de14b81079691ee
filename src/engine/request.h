// Request: one generate() call as the batching engine sees it — its prompt, sampler, stop
// strings, streaming decoder and progress — and the events it sends back to the calling thread
// (text pieces, log-probabilities, the end). The engine thread calls on_logits() with the logits
// of the request's last evaluated token; the caller thread drains events() and runs the user's
// callbacks, so a slow callback never holds up the batch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/json_schema/matcher.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/stop_matcher.h"
#include "geniex/geniex.hpp"
#include "tokenizer/tokenizer.h"

namespace geniex::engine {

/// The images of a prompt: which prompt positions take a feature row instead of their token's
/// embedding. Those positions carry cache keys in Request::prompt (ids >= n_vocab derived from
/// the image's pixels, so the prefix cache never confuses two images); `ids` has the real token
/// ids for reporting and sampling penalties. An image is encoded only when a prefill chunk first
/// reaches one of its positions (ensure(), engine thread): an image whose positions all come
/// from the prefix cache (the same image again, in a later turn) is never encoded again.
struct PromptImages {
  std::vector<float> table;   ///< feature rows, n_embd floats each; an image's once encoded
  std::vector<int32_t> rows;  ///< per prompt position: -1, or the row of `table` it takes
  std::vector<int32_t> ids;   ///< per prompt position: the token id the user's prompt has
  struct Slot {
    int32_t first_pos = 0, end_pos = 0;  ///< prompt positions [first, end) of its expansion
    int32_t first_row = 0, n_rows = 0;   ///< its rows of `table`
    bool encoded = false;
  };
  std::vector<Slot> slots;  ///< one per image, in prompt order
  /// Writes image i's feature rows to `rows` (set by whoever builds the prompt).
  std::function<Status(size_t i, std::span<float> rows)> encode;
  size_t n_embd = 0;

  /// Encodes every image with a position in [begin, end) that is not encoded yet.
  Status ensure(int32_t begin, int32_t end);
};

/// Something the caller thread must hand to the user, in order.
struct RequestEvent {
  std::string text;                       ///< a piece of final text (may be empty)
  int32_t token = -1;                     ///< the token that produced it
  std::optional<TokenLogprobs> logprobs;  ///< with GenerationConfig::logprobs
  size_t n_tokens = 0;                    ///< generated tokens when the event was made
  int32_t prefill_done = -1;              ///< >= 0: a prefill progress event (prompt tokens done)
};

class Request {
 public:
  enum class Kind { kGenerate, kLogits };
  using Clock = std::chrono::steady_clock;

  /// kInvalidArgument for bad sampling values or stop strings.
  static Result<std::unique_ptr<Request>> create(Kind kind, std::span<const int32_t> prompt,
                                                 const GenerationConfig& config,
                                                 const tokenizer::Tokenizer& tok, int32_t n_vocab);

  // ---- engine thread -------------------------------------------------------------------------
  /// Samples the next token from `logits` (the last evaluated token's), streams its text, and
  /// decides whether generation goes on (then next_token() is the token to evaluate).
  Status on_logits(std::span<const float> logits);
  /// The prompt was evaluated (its logits were not needed: kLogits requests).
  void on_all_logits(std::span<const float> rows);
  /// Ends the request (flushing held-back text unless it stopped on a string or was cancelled).
  void finish(StopReason reason);
  /// Ends the request with an error.
  void fail(Status s);
  /// Reports prefill progress (an event for GenerationConfig::on_prefill_progress).
  void on_prefill_progress();
  /// Prompt tokens reused from the cache (set at admission).
  void set_cached(int32_t n) {
    gen_.timings.cached_tokens = n;
    n_evaluated = n;
  }
  /// Attaches the prompt's images (before submit): the engine feeds their rows, sampling
  /// penalties and Generation::prompt_tokens see `images->ids`.
  void set_images(std::shared_ptr<PromptImages> images);
  [[nodiscard]] bool done() const { return done_.load(); }
  [[nodiscard]] int32_t next_token() const { return next_token_; }
  /// The caller cancelled: its callback returned false or config.cancel fired.
  [[nodiscard]] bool cancel_requested() const {
    return cancel_.load() || (config.cancel && config.cancel->cancelled());
  }

  // ---- caller thread ---------------------------------------------------------------------------
  /// Waits for events (or the end); returns false when the request is over and drained.
  bool wait_events(std::deque<RequestEvent>& out);
  void request_cancel() { cancel_.store(true); }
  /// The final result (after wait_events returned false).
  Result<Generation> result();
  Result<std::vector<float>> logits_result();

  // ---- shared, set up by the engine
  // --------------------------------------------------------------
  Kind kind = Kind::kGenerate;
  GenerationConfig config;
  std::vector<int32_t> prompt;
  int32_t n_evaluated = 0;               ///< prompt tokens in the KV cache (cached + prefilled)
  int32_t logits_from = 0;               ///< kLogits: the first position whose logits are returned
  std::shared_ptr<PromptImages> images;  ///< set_images(); null for a text prompt
  int slot = -1;                         ///< engine slot while admitted
  Clock::time_point t_start = Clock::now();
  Clock::time_point t_first_token;

 private:
  Request() = default;
  void emit(std::string piece, int32_t token);
  void push(RequestEvent ev);

  std::optional<sampling::Sampler> sampler_;
  std::optional<sampling::StopMatcher> stops_;
  std::optional<tokenizer::StreamDecoder> decoder_;
  const tokenizer::Tokenizer* tok_ = nullptr;
  std::vector<int32_t> history_;
  std::vector<float> masked_;
  std::shared_ptr<const json_schema::Schema> schema_;  ///< config.json_schema, compiled
  std::optional<json_schema::Matcher> json_;           ///< what the output has matched so far
  std::optional<TokenLogprobs> pending_logprobs_;
  int32_t next_token_ = -1;
  std::atomic<bool> done_{false};
  std::atomic<bool> cancel_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestEvent> events_;
  bool finished_ = false;  ///< guarded by mu_: the caller may collect the result
  Status error_;
  Generation gen_;
  std::vector<float> all_logits_;
};

}  // namespace geniex::engine
