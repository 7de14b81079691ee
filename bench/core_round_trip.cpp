// Cache-line round trip between two CPUs: two threads, pinned to CPUs A and B, pass a counter
// back and forth through one cache line; prints the mean time of one round trip. It tells where
// a VM's vCPUs sit at that moment: on one die ~50-60 ns, on two dies ~300 ns and more (AMD EPYC),
// which is what a thread pays to read a row another thread just wrote.
//
//   core_round_trip [--cpus A,B] [--trips N]        (default: CPUs 0,1 and 200000 trips)
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

int usage() {
  std::fprintf(stderr, "usage: core_round_trip [--cpus A,B] [--trips N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int a = 0, b = 1;
  long trips = 200000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cpus" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%d,%d", &a, &b) != 2 || a < 0 || b < 0 || a == b) return usage();
    } else if (arg == "--trips" && i + 1 < argc) {
      trips = std::strtol(argv[++i], nullptr, 10);
      if (trips < 1 || trips > 1000000000L) return usage();
    } else {
      return usage();
    }
  }
  alignas(64) std::atomic<long> turn{0};
  std::atomic<bool> pinned_b{true};
  std::thread other([&] {
    pinned_b.store(pin(b));
    for (long i = 0; i < trips; ++i) {
      while (turn.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      turn.store(2 * i + 2, std::memory_order_release);
    }
  });
  if (!pin(a)) {
    std::fprintf(stderr, "core_round_trip: cannot run on CPU %d\n", a);
    std::_Exit(1);  // the other thread spins on a turn that never comes
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < trips; ++i) {
    turn.store(2 * i + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  other.join();
  if (!pinned_b.load()) {
    std::fprintf(stderr, "core_round_trip: cannot run on CPU %d\n", b);
    return 1;
  }
  std::printf(
      "CPUs %d,%d: %.1f ns per round trip\n", a, b,
      std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(trips));
  return 0;
}
