// Counts open connections per client address and in total, so one client (or a crowd) cannot
// hold every socket and file descriptor of geniex serve. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace geniex::server {

class ConnectionLimits {
 public:
  enum class Outcome { kAccepted, kClientFull, kTotalFull };

  /// Holds one counted connection; gives it back on destruction. Movable.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : owner_(o.owner_), client_(std::move(o.client_)) {
      o.owner_ = nullptr;
    }
    Ticket& operator=(Ticket&& o) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }
    void release();

   private:
    friend class ConnectionLimits;
    ConnectionLimits* owner_ = nullptr;
    std::string client_;
  };

  /// per_client, total >= 1.
  ConnectionLimits(int per_client, int total);

  /// Counts a new connection from `client` unless that client or the server is at its limit;
  /// `ticket` holds it only for kAccepted.
  Outcome open(const std::string& client, Ticket& ticket);

  [[nodiscard]] int open_total() const;
  [[nodiscard]] int open_from(const std::string& client) const;
  [[nodiscard]] int per_client() const { return per_client_; }
  [[nodiscard]] int total() const { return total_; }

 private:
  void close(const std::string& client);

  const int per_client_;
  const int total_;
  mutable std::mutex mu_;
  std::map<std::string, int> by_client_;  ///< only clients with open connections
  int open_ = 0;
};

}  // namespace geniex::server
