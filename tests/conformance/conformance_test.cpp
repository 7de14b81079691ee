// Every (backend, subject, dtype) against graph::run_reference, one named case each:
// Conformance/Op.MatchesReference/<backend>_<subject>_<dtype>. Each problem of the subject runs
// on every instance of the backend (the CPU: 1 and 3 threads), through its extra runs (states
// carried), then once more to show the result does not change; outputs are measured under the
// tolerance table's entry (tolerance.cpp), states byte for byte or under their own entry.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>

#include "conformance/backends.h"
#include "conformance/compare.h"
#include "conformance/problems.h"
#include "conformance/tolerance.h"

namespace geniex::conformance {
namespace {

struct Param {
  size_t backend;  // index into all_backends()
  Subject subject;
};

// Test listings show the case name, not the parameter's bytes.
void PrintTo(const Param& p, std::ostream* os) {
  *os << all_backends()[p.backend].name << " " << p.subject.name << " "
      << ggml_type_name(p.subject.dtype);
}

std::vector<Param> all_params() {
  std::vector<Param> out;
  const auto subjects = all_subjects();
  for (size_t b = 0; b < all_backends().size(); ++b) {
    for (const auto& s : subjects) out.push_back({b, s});
  }
  return out;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return all_backends()[info.param.backend].name + "_" + info.param.subject.name + "_" +
         std::string(ggml_type_name(info.param.subject.dtype));
}

std::vector<float> dequantized(GgmlType t, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> f(n);
  EXPECT_TRUE(
      quant::dequantize_row(t, std::span(bytes).first(quant::testing::row_bytes(t, n)), f).ok());
  return f;
}

class Op : public ::testing::TestWithParam<Param> {};

void check_states(const BackendEntry& be, const Subject& s, const Problem& p, const Outcome& got,
                  const Outcome& want, const std::string& what) {
  ASSERT_EQ(got.states.size(), want.states.size());
  for (size_t i = 0; i < got.states.size(); ++i) {
    if (p.state_variant.empty()) {
      EXPECT_TRUE(got.states[i] == want.states[i]) << what << ": state " << i << " differs";
      continue;
    }
    const auto tol = find_tolerance(be.family, s.name, s.dtype, p.state_variant);
    ASSERT_TRUE(tol.has_value());
    const size_t n = sz(p.g.node(p.states[i].id).desc.nelements());
    const auto m = measure(*tol, dequantized(p.states[i].type, got.states[i], n),
                           dequantized(p.states[i].type, want.states[i], n), p);
    EXPECT_TRUE(m.ok) << what << ": state " << i << " " << metric_name(tol->metric) << " "
                      << m.error << " > " << tol->bound;
  }
}

TEST_P(Op, MatchesReference) {
  const BackendEntry& be = all_backends()[GetParam().backend];
  const Subject& s = GetParam().subject;
  if (const std::string why = be.not_here(); !why.empty()) GTEST_SKIP() << why;
  // Fresh instances per case: backends may cache what they derive from a weight by its address
  // (weights are immutable while bound), and problems of earlier cases are freed.
  auto inst = be.make();
  ASSERT_TRUE(inst.ok()) << be.name << " is not available: " << inst.status().to_string();
  const auto plain = find_tolerance(be.family, s.name, s.dtype);
  ProblemList problems = make_problems(s, be.target);
  ASSERT_FALSE(problems.empty());
  for (size_t ins = 0; ins < inst->size(); ++ins) {
    backends::Backend& backend = *(*inst)[ins];
    // Fresh problems for every instance (extra runs rebuild their graphs).
    if (ins > 0) problems = make_problems(s, be.target);
    for (auto& pp : problems) {
      Problem& p = *pp;
      if (p.heavy && ins + 1 < inst->size()) continue;  // the last (3 threads on the CPU)
      const std::string what = backend.name() + ": " + p.name;
      SCOPED_TRACE(what);
      std::string unsupported;
      for (NodeId id = 0; id < p.g.size(); ++id) {
        const auto sup = backend.supports(p.g, id);
        if (sup.level != backends::Support::kNative && unsupported.empty()) {
          unsupported = "node " + std::to_string(id) + " (" + p.g.node(id).name +
                        "): " + std::string(backends::support_name(sup.level)) + ", " + sup.reason;
        }
      }
      if (!plain.has_value()) {
        EXPECT_FALSE(unsupported.empty())
            << "the backend runs it natively but the tolerance table has no row for it";
        continue;
      }
      ASSERT_TRUE(unsupported.empty()) << unsupported;
      const auto tol = find_tolerance(be.family, s.name, s.dtype, p.variant);
      std::vector<std::vector<uint8_t>> ref_states, be_states;
      for (const auto& st : p.states) ref_states.push_back(st.bytes);
      be_states = ref_states;
      for (int run = 0; run <= p.extra_runs; ++run) {
        if (run > 0) p.before_run(p, run);
        const auto before = be_states;
        const Outcome want = run_problem(p, nullptr, &ref_states);
        ASSERT_TRUE(want.status.ok()) << "reference: " << want.status.to_string();
        const Outcome got = run_problem(p, &backend, &be_states);
        ASSERT_TRUE(got.status.ok()) << got.status.to_string();
        const std::string r = what + (p.extra_runs > 0 ? ", run " + std::to_string(run) : "");
        if (p.out != kNoNode) {
          const auto m = measure(*tol, got.out, want.out, p);
          std::printf("[ err ] %-70s %s %.3g (bound %.3g)\n", r.c_str(),
                      std::string(metric_name(tol->metric)).c_str(), m.error, tol->bound);
          EXPECT_TRUE(m.ok) << r << ": " << metric_name(tol->metric) << " " << m.error << " > "
                            << tol->bound << " (" << tol->why << ")";
          if (tol->min_error > 0) {
            EXPECT_GT(m.error, tol->min_error) << r << ": expected to differ from the reference";
          }
        }
        check_states(be, s, p, got, want, r);
        ref_states = want.states;
        be_states = got.states;
        if (p.heavy) continue;
        // The same run again on this instance gives the same bits (buffers and caches reused).
        const Outcome again = run_problem(p, &backend, &before);
        ASSERT_TRUE(again.status.ok()) << again.status.to_string();
        EXPECT_TRUE(again.out.size() == got.out.size() &&
                    (got.out.empty() ||
                     std::memcmp(again.out.data(), got.out.data(), got.out.size() * 4) == 0))
            << r << ": a second run differs";
        EXPECT_TRUE(again.states == got.states) << r << ": a second run wrote other states";
        if (run == p.extra_runs && p.min_error_over_fresh_states > 0) {
          std::vector<std::vector<uint8_t>> fresh;
          for (const auto& st : p.states) fresh.push_back(st.bytes);
          const Outcome blind = run_problem(p, &backend, &fresh);
          ASSERT_TRUE(blind.status.ok()) << blind.status.to_string();
          EXPECT_GT(nmse(blind.out, want.out), p.min_error_over_fresh_states)
              << r << ": the result does not depend on the states earlier runs wrote";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Op, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace geniex::conformance
