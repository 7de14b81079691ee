// EngineGate: serializes calls into geniex::Model, which is not thread-safe yet.
//
// Remove when Model is thread-safe (continuous batching inside the engine): delete this file
// pair and the one `gate.enter()` (with the `model.reset()` after it) in completion_handler.cpp;
// request threads then call Model::generate concurrently and the engine batches them.
//
// FIFO (a ticket lock), so requests run in arrival order and TTFT under load is fair.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace geniex::server {

class EngineGate {
 public:
  /// Exclusive use of the model while alive.
  class Pass {
   public:
    Pass(Pass&& o) noexcept : gate_(o.gate_) { o.gate_ = nullptr; }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&&) = delete;
    ~Pass();

   private:
    friend class EngineGate;
    explicit Pass(EngineGate* g) : gate_(g) {}
    EngineGate* gate_;
  };

  /// Blocks until every earlier caller has left.
  Pass enter();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ = 0;
  uint64_t serving_ = 0;
};

}  // namespace geniex::server
