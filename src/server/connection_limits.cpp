#include "server/connection_limits.h"

#include <utility>

namespace geniex::server {

ConnectionLimits::Ticket& ConnectionLimits::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = o.owner_;
    client_ = std::move(o.client_);
    o.owner_ = nullptr;
  }
  return *this;
}

void ConnectionLimits::Ticket::release() {
  if (owner_ != nullptr) owner_->close(client_);
  owner_ = nullptr;
}

ConnectionLimits::ConnectionLimits(int per_client, int total)
    : per_client_(per_client < 1 ? 1 : per_client), total_(total < 1 ? 1 : total) {}

ConnectionLimits::Outcome ConnectionLimits::open(const std::string& client, Ticket& ticket) {
  std::lock_guard lock(mu_);
  if (open_ >= total_) return Outcome::kTotalFull;
  int& n = by_client_[client];
  if (n >= per_client_) return Outcome::kClientFull;  // n > 0: the entry existed
  ++n;
  ++open_;
  ticket.release();
  ticket.owner_ = this;
  ticket.client_ = client;
  return Outcome::kAccepted;
}

void ConnectionLimits::close(const std::string& client) {
  std::lock_guard lock(mu_);
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return;
  --open_;
  if (--it->second <= 0) by_client_.erase(it);
}

int ConnectionLimits::open_total() const {
  std::lock_guard lock(mu_);
  return open_;
}

int ConnectionLimits::open_from(const std::string& client) const {
  std::lock_guard lock(mu_);
  auto it = by_client_.find(client);
  return it == by_client_.end() ? 0 : it->second;
}

}  // namespace geniex::server
