#include "server/admission.h"

#include <algorithm>

namespace geniex::server {

Admission::Slot& Admission::Slot::operator=(Slot&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = o.owner_;
    o.owner_ = nullptr;
  }
  return *this;
}

void Admission::Slot::release() {
  if (owner_) owner_->release_one();
  owner_ = nullptr;
}

Admission::Admission(int parallel, int queue)
    : parallel_(std::max(1, parallel)), queue_(std::max(0, queue)) {}

Admission::Outcome Admission::acquire(Slot& slot) {
  std::unique_lock lock(mu_);
  if (closed_) return Outcome::kClosed;
  if (active_ < parallel_ && waiting_ == 0) {
    ++active_;
    slot = Slot(this);
    return Outcome::kAdmitted;
  }
  if (waiting_ >= queue_) return Outcome::kQueueFull;
  const uint64_t ticket = next_ticket_++;
  ++waiting_;
  cv_.wait(lock, [&] { return closed_ || (ticket == serving_ && active_ < parallel_); });
  --waiting_;
  if (closed_) {
    cv_.notify_all();
    return Outcome::kClosed;
  }
  ++serving_;
  ++active_;
  cv_.notify_all();  // the next ticket may fit too
  slot = Slot(this);
  return Outcome::kAdmitted;
}

void Admission::release_one() {
  std::lock_guard lock(mu_);
  --active_;
  cv_.notify_all();
}

void Admission::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

int Admission::in_flight() const {
  std::lock_guard lock(mu_);
  return active_;
}

int Admission::queued() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

}  // namespace geniex::server
