// The resource budget of one render, reachable from code that has no Evaluator at hand (value
// printing, equality and ordering, JSON, Python string helpers), and the guard that keeps every
// recursive walk of the interpreter inside the thread's stack.
//
// Evaluator installs a RenderBudget for its thread while it renders. Everything a template can
// make the interpreter allocate or visit is charged to it before (or, for bounded small multiples
// of already charged data, as) it happens: bytes of strings and lists built or scanned count
// against RenderLimits::max_work_bytes, expression nodes evaluated and container elements visited
// against max_steps, and no single string may grow past max_output_bytes. Outside a render the
// free functions still bound string growth (with the default limits) and nesting.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tokenizer/jinja/evaluator.h"

namespace geniex::jinja {

class RenderBudget {
 public:
  /// Becomes the thread's current budget until destroyed (budgets nest: the previous one is
  /// restored).
  explicit RenderBudget(const RenderLimits& limits);
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  /// The thread's current budget, or nullptr outside a render.
  static RenderBudget* current();

  [[nodiscard]] const RenderLimits& limits() const { return limits_; }
  /// Bytes allocated, copied or scanned; throws kLimit past max_work_bytes.
  void charge_bytes(uint64_t n);
  /// Expression nodes evaluated, container elements visited; throws kLimit past max_steps.
  void charge_steps(uint64_t n);

 private:
  const RenderLimits& limits_;
  uint64_t bytes_ = 0;
  uint64_t steps_ = 0;
  RenderBudget* prev_ = nullptr;
};

/// Charges the current budget, if any.
void charge_bytes(uint64_t n);
void charge_steps(uint64_t n);
/// Throws kLimit when a string or output would grow to `bytes` (past max_output_bytes of the
/// current budget, or of the default limits outside a render). Call it before appending.
void check_string_size(uint64_t bytes);
/// Charges `count` elements of `element_bytes` each that are about to be allocated (bytes) and
/// refuses collections longer than max_collection.
void charge_elements(uint64_t count, uint64_t element_bytes);

/// Entered by every recursive step of the interpreter: statement and expression evaluation,
/// value printing, comparison, JSON, conversion from JSON. Throws kLimit ("nested too deeply")
/// when the thread has recursed through more than kMaxNestDepth guards or used more than its
/// stack allowance (a fraction of what the thread's stack has left when the outermost guard is
/// entered, at most kMaxStackBytes), so no template or value can overflow the stack, whatever
/// the thread (a server worker, a Python or a JVM thread with a small stack).
class NestGuard {
 public:
  static constexpr int kMaxNestDepth = 5000;
  static constexpr size_t kMaxStackBytes = size_t{4} << 20;

  NestGuard();
  ~NestGuard();
  NestGuard(const NestGuard&) = delete;
  NestGuard& operator=(const NestGuard&) = delete;
};

}  // namespace geniex::jinja
