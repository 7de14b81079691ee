#include "conformance/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace geniex::conformance {

double nmse(const std::vector<float>& a, const std::vector<float>& r) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < r.size() && i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - r[i];
    num += d * d;
    den += static_cast<double>(r[i]) * r[i];
  }
  if (std::isnan(num)) return std::numeric_limits<double>::infinity();
  if (den == 0.0) return num == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return num / den;
}

double max_rel(const std::vector<float>& a, const std::vector<float>& r, double floor) {
  double worst = 0.0, m = floor;
  for (size_t i = 0; i < r.size(); ++i) {
    const double e = std::fabs(static_cast<double>(a[i]) - r[i]);
    if (std::isnan(e)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, e);
    m = std::max(m, std::fabs(static_cast<double>(r[i])));
  }
  return worst / m;
}

Measured measure(const Tolerance& tol, const std::vector<float>& got,
                 const std::vector<float>& want, const Problem& p) {
  Measured m;
  if (got.size() != want.size()) return m;
  switch (tol.metric) {
    case Metric::kBitExact: {
      size_t diff = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        diff += std::memcmp(&got[i], &want[i], sizeof(float)) != 0 ? 1 : 0;
      }
      m.error = static_cast<double>(diff);
      m.ok = diff == 0;
      return m;
    }
    case Metric::kMaxRel: m.error = max_rel(got, want); break;
    case Metric::kNmse: m.error = nmse(got, want); break;
    case Metric::kGeluF16: {
      if (p.gelu_x == nullptr || p.gelu_x->size() != got.size()) return m;
      for (size_t i = 0; i < got.size(); ++i) {
        const double up = p.gelu_up != nullptr ? std::fabs((*p.gelu_up)[i]) : 1.0;
        const double bound = (tol.bound * std::fabs((*p.gelu_x)[i]) + 1e-6) * up;
        const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
        if (std::isnan(e)) {
          m.error = std::numeric_limits<double>::infinity();
          break;
        }
        if (bound > 0) m.error = std::max(m.error, e / bound);
      }
      m.ok = m.error <= 1.0;
      return m;
    }
  }
  m.ok = m.error <= tol.bound;
  return m;
}

double compare_with_reference(Problem& p, NodeId out, const std::string& what,
                              backends::Backend& backend) {
  const size_t n = sz(p.g.node(out).desc.nelements());
  std::vector<float> ref(n), got(n, std::numeric_limits<float>::quiet_NaN());
  p.b.bind_output(out, ref);
  Status s = graph::run_reference(p.g, p.b);
  EXPECT_TRUE(s.ok()) << s.to_string();
  for (NodeId id = 0; id < p.g.size(); ++id) {
    const backends::OpSupport sup = backend.supports(p.g, id);
    EXPECT_EQ(sup.level, backends::Support::kNative)
        << what << ": node " << id << ": " << sup.reason;
  }
  p.b.bind_output(out, got);
  s = backend.run(p.g, p.b);
  EXPECT_TRUE(s.ok()) << what << ": " << s.to_string();
  const double e = nmse(got, ref);
  std::printf("[ nmse ] %-48s %.3g\n", what.c_str(), e);
  return e;
}

}  // namespace geniex::conformance
