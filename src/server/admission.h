// Admission control: at most `parallel` requests generate at once and at most `queue` wait
// for a slot; anything beyond is refused at once (429), so a burst never piles up threads or
// blocks the accept loop. close() (shutdown) refuses new requests and wakes the waiting ones.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace geniex::server {

class Admission {
 public:
  enum class Outcome { kAdmitted, kQueueFull, kClosed };

  /// Holds one generation slot; releases it on destruction. Movable.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
    Slot& operator=(Slot&& o) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { release(); }
    [[nodiscard]] bool held() const { return owner_ != nullptr; }
    void release();

   private:
    friend class Admission;
    explicit Slot(Admission* owner) : owner_(owner) {}
    Admission* owner_ = nullptr;
  };

  /// parallel >= 1, queue >= 0.
  Admission(int parallel, int queue);

  /// A free slot now, else a place in the queue (blocks, FIFO, until a slot frees or close()),
  /// else kQueueFull immediately. `slot` is held only for kAdmitted.
  Outcome acquire(Slot& slot);

  /// Refuses everything from now on and wakes the queue (they get kClosed).
  void close();

  [[nodiscard]] int in_flight() const;
  [[nodiscard]] int queued() const;
  [[nodiscard]] int parallel() const { return parallel_; }
  [[nodiscard]] int queue_capacity() const { return queue_; }

 private:
  void release_one();

  const int parallel_;
  const int queue_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;
  int waiting_ = 0;
  uint64_t next_ticket_ = 0;  ///< FIFO order of the queue
  uint64_t serving_ = 0;      ///< the next ticket that may take a free slot
  bool closed_ = false;
};

}  // namespace geniex::server
