#include "conformance/problem.h"

namespace geniex::conformance {

Outcome run_problem(const Problem& p, backends::Backend* backend,
                    const std::vector<std::vector<uint8_t>>* states) {
  Outcome o;
  graph::Bindings b = p.b;
  if (states != nullptr) {
    o.states = *states;
  } else {
    for (const auto& s : p.states) o.states.push_back(s.bytes);
  }
  for (size_t i = 0; i < p.states.size() && i < o.states.size(); ++i) {
    b.bind_state(p.states[i].id, p.states[i].type, o.states[i]);
  }
  if (p.out != kNoNode) {
    o.out.assign(sz(p.g.node(p.out).desc.nelements()), std::numeric_limits<float>::quiet_NaN());
    b.bind_output(p.out, o.out);
  }
  o.status = backend != nullptr ? backend->run(p.g, b) : graph::run_reference(p.g, b);
  return o;
}

}  // namespace geniex::conformance
