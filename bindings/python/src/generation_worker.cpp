// GenerationWorker: the thread, the piece queue with its optional handshake, and the registry of
// running workers that interpreter exit waits for.
#include "generation_worker.h"

#include <thread>
#include <utility>
#include <vector>

namespace geniex::python {
namespace {

// Workers whose thread has not ended yet (weak: a finished worker may be freed at once).
struct Registry {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::weak_ptr<GenerationWorker>> live;
  int running = 0;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: threads may outlive static teardown
  return *r;
}

}  // namespace

std::shared_ptr<GenerationWorker> GenerationWorker::start(Job job, GenerationConfig config,
                                                          std::shared_ptr<CancelToken> cancel,
                                                          bool handshake) {
  std::shared_ptr<GenerationWorker> w(new GenerationWorker());
  w->handshake_ = handshake;
  w->cancel_ = cancel ? std::move(cancel) : std::make_shared<CancelToken>();
  config.cancel = w->cancel_;
  {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lk(reg.mu);
    std::erase_if(reg.live, [](const auto& p) { return p.expired(); });
    reg.live.push_back(w);
    ++reg.running;
  }
  std::thread([w, run = std::move(job), cfg = std::move(config)]() mutable {
    auto out =
        run(cfg, [&w](std::string_view text, int32_t token) { return w->on_piece(text, token); });
    run = nullptr;  // drops the job's model reference before the thread counts as ended
    {
      std::lock_guard<std::mutex> lk(w->mu_);
      w->result_.emplace(std::move(out));
      w->done_ = true;
    }
    w->cv_.notify_all();
    w.reset();
    Registry& reg = registry();
    std::lock_guard<std::mutex> lk(reg.mu);
    --reg.running;
    reg.cv.notify_all();
  }).detach();
  return w;
}

bool GenerationWorker::on_piece(std::string_view text, int32_t token) {
  std::unique_lock<std::mutex> lk(mu_);
  if (aborted_) return false;
  pieces_.push_back(Piece{std::string(text), token});
  if (!handshake_) {
    lk.unlock();
    cv_.notify_all();
    return true;
  }
  awaiting_answer_ = true;
  cv_.notify_all();
  cv_.wait(lk, [&] { return !awaiting_answer_ || aborted_; });
  return !aborted_ && answer_;
}

GenerationWorker::Next GenerationWorker::next(Piece& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!cv_.wait_for(lk, timeout, [&] { return !pieces_.empty() || done_; })) {
    return Next::kTimeout;
  }
  if (!pieces_.empty()) {
    out = std::move(pieces_.front());
    pieces_.pop_front();
    return Next::kPiece;
  }
  return Next::kDone;
}

void GenerationWorker::answer(bool go_on) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    answer_ = go_on;
    awaiting_answer_ = false;
  }
  cv_.notify_all();
}

void GenerationWorker::cancel() {
  cancel_->cancel();
  {
    std::lock_guard<std::mutex> lk(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

Result<Generation> GenerationWorker::take_result() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!result_) return internal_error("the generation has not ended yet");
  Result<Generation> r = std::move(*result_);
  result_.reset();
  return r;
}

void GenerationWorker::cancel_and_wait_all() {
  Registry& reg = registry();
  std::vector<std::shared_ptr<GenerationWorker>> alive;
  {
    std::lock_guard<std::mutex> lk(reg.mu);
    for (auto& p : reg.live) {
      if (auto w = p.lock()) alive.push_back(std::move(w));
    }
  }
  for (auto& w : alive) w->cancel();
  alive.clear();
  std::unique_lock<std::mutex> lk(reg.mu);
  reg.cv.wait(lk, [&] { return reg.running == 0; });
}

}  // namespace geniex::python
