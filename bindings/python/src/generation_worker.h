// GenerationWorker: one generate()/chat() call running on a thread of its own, so that the Python
// caller can wait for pieces without the GIL, in short slices (to notice Ctrl-C), answer each
// piece (a callback returning False, or raising), and cancel at any moment. No Python in here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "geniex/geniex.hpp"

namespace geniex::python {

/// One piece of generated text and the token that completed it.
struct Piece {
  std::string text;
  int32_t token = -1;
};

class GenerationWorker {
 public:
  /// The call to run: generate or chat on a model the job keeps alive, with the config and
  /// callback the worker passes in.
  using Job = std::function<Result<Generation>(const GenerationConfig&, const TokenCallback&)>;

  /// Starts `job` on a new (detached) thread. The config's cancel token is `cancel` (a fresh one
  /// when null). With `handshake`, each piece waits for answer() before the engine's caller
  /// thread goes on, so a false answer ends the generation exactly after that piece (the C++
  /// callback contract); without it pieces are queued and the generation runs ahead.
  static std::shared_ptr<GenerationWorker> start(Job job, GenerationConfig config,
                                                 std::shared_ptr<CancelToken> cancel,
                                                 bool handshake);

  enum class Next { kPiece, kDone, kTimeout };
  /// Waits up to `timeout` for the next piece (kPiece, moved into `out`) or the end (kDone: every
  /// piece was taken and result() is ready). Call without the GIL.
  Next next(Piece& out, std::chrono::milliseconds timeout);
  /// With handshake: the answer for the piece next() returned last (true = go on).
  void answer(bool go_on);
  /// Stops the generation at its next step (prefill chunk or token); never blocks.
  void cancel();
  /// The outcome, once next() returned kDone.
  Result<Generation> take_result();

  /// Cancels every generation still running and waits until their threads have ended (at
  /// interpreter exit, so no thread runs engine code while the process tears down).
  static void cancel_and_wait_all();

 private:
  GenerationWorker() = default;
  bool on_piece(std::string_view text, int32_t token);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Piece> pieces_;
  bool handshake_ = false;
  bool awaiting_answer_ = false;
  bool answer_ = true;
  bool aborted_ = false;
  bool done_ = false;
  std::optional<Result<Generation>> result_;
  std::shared_ptr<CancelToken> cancel_;
};

}  // namespace geniex::python
