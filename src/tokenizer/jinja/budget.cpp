// Render budget (thread-local) and the nesting / stack guard.
#include "tokenizer/jinja/budget.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "tokenizer/jinja/error.h"

namespace geniex::jinja {
namespace {

thread_local RenderBudget* g_budget = nullptr;

// Nesting state of this thread: guards entered, the frame address of the outermost one and how
// far below it the stack may grow.
thread_local int g_depth = 0;
thread_local uintptr_t g_base = 0;
thread_local size_t g_allowance = 0;
// Lowest usable stack address of this thread (0: unknown), looked up once per thread.
thread_local uintptr_t g_stack_low = 0;
thread_local bool g_stack_known = false;

uintptr_t frame_address() { return reinterpret_cast<uintptr_t>(__builtin_frame_address(0)); }

uintptr_t stack_low() {
  if (!g_stack_known) {
    g_stack_known = true;
#if defined(__linux__)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        g_stack_low = reinterpret_cast<uintptr_t>(addr);
      }
      pthread_attr_destroy(&attr);
    }
#endif
  }
  return g_stack_low;
}

// Half of what the stack has left below `here` (the other half stays for the code that catches
// the error and for whatever runs the render), at most kMaxStackBytes; 256 KiB when the bounds
// are unknown.
size_t stack_allowance(uintptr_t here) {
  const uintptr_t low = stack_low();
  if (low == 0 || low >= here) return size_t{256} << 10;
  return std::min<size_t>(NestGuard::kMaxStackBytes, (here - low) / 2);
}

[[noreturn]] void too_deep() {
  fail(ErrorKind::kLimit,
       "nested too deeply (an expression, call chain or value deeper than the interpreter "
       "allows, or a value that contains itself)");
}

const RenderLimits& default_limits() {
  static const RenderLimits limits;
  return limits;
}

}  // namespace

RenderBudget::RenderBudget(const RenderLimits& limits) : limits_(limits), prev_(g_budget) {
  g_budget = this;
}

RenderBudget::~RenderBudget() { g_budget = prev_; }

RenderBudget* RenderBudget::current() { return g_budget; }

void RenderBudget::charge_bytes(uint64_t n) {
  bytes_ += n;
  if (bytes_ > limits_.max_work_bytes || bytes_ < n) {
    fail(ErrorKind::kLimit, "template did more than " + std::to_string(limits_.max_work_bytes) +
                                " bytes of work (strings and lists built, copied or scanned)");
  }
}

void RenderBudget::charge_steps(uint64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps || steps_ < n) {
    fail(ErrorKind::kLimit, "template took more than " + std::to_string(limits_.max_steps) +
                                " steps (expressions evaluated and elements visited)");
  }
}

void charge_bytes(uint64_t n) {
  if (g_budget != nullptr) g_budget->charge_bytes(n);
}

void charge_steps(uint64_t n) {
  if (g_budget != nullptr) g_budget->charge_steps(n);
}

void check_string_size(uint64_t bytes) {
  const RenderLimits& l = g_budget != nullptr ? g_budget->limits() : default_limits();
  if (bytes > l.max_output_bytes) {
    fail(ErrorKind::kLimit,
         "output or string exceeds " + std::to_string(l.max_output_bytes) + " bytes");
  }
}

void charge_elements(uint64_t count, uint64_t element_bytes) {
  const RenderLimits& l = g_budget != nullptr ? g_budget->limits() : default_limits();
  if (count > l.max_collection) {
    fail(ErrorKind::kLimit, "list of " + std::to_string(count) + " items is longer than " +
                                std::to_string(l.max_collection));
  }
  charge_bytes(count * element_bytes);
}

NestGuard::NestGuard() {
  const uintptr_t here = frame_address();
  if (g_depth == 0) {
    g_base = here;
    g_allowance = stack_allowance(here);
  }
  ++g_depth;
  if (g_depth > kMaxNestDepth || (g_base > here && g_base - here > g_allowance)) {
    --g_depth;
    too_deep();
  }
}

NestGuard::~NestGuard() { --g_depth; }

}  // namespace geniex::jinja
