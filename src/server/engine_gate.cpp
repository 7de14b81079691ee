#include "server/engine_gate.h"

namespace geniex::server {

EngineGate::Pass EngineGate::enter() {
  std::unique_lock lock(mu_);
  const uint64_t ticket = next_++;
  cv_.wait(lock, [&] { return serving_ == ticket; });
  return Pass(this);
}

EngineGate::Pass::~Pass() {
  if (!gate_) return;
  std::lock_guard lock(gate_->mu_);
  ++gate_->serving_;
  gate_->cv_.notify_all();
}

}  // namespace geniex::server
