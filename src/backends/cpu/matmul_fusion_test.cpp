// Matmul epilogues (matmul_fusion.h): which chains are folded, and that a folded chain gives the
// bits of the same ops run one by one (the chain's matmul bound as an output stops the folding).
#include "backends/cpu/matmul_fusion.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "conformance/problem.h"

namespace geniex::backends {
namespace {

using namespace conformance;  // NOLINT(build/namespaces): the shared test helpers
using cpu::MatmulChain;
using graph::Bindings;
using graph::Graph;
using graph::make_desc;

struct Chain {
  Graph g;
  NodeId x = 0, w = 0, bias = 0, resid = 0, mm = 0, biased = 0, act = 0, y = 0;
};

// y = resid + act(matmul(w, x) + bias), with resid an input (bound before the matmul).
Chain make_chain(GgmlType wt, int64_t k, int64_t n, int64_t m, OpKind act) {
  Chain c;
  c.x = c.g.add_input(make_desc(kF32, k, m), "x");
  c.resid = c.g.add_input(make_desc(kF32, n, m), "resid");
  c.w = c.g.add_weight(make_desc(wt, k, n), "w");
  c.bias = c.g.add_weight(make_desc(kF32, n), "bias");
  c.mm = add(c.g, OpKind::kMatMul, {c.w, c.x});
  c.biased = add(c.g, OpKind::kAdd, {c.mm, c.bias});
  c.act = add(c.g, act, {c.biased});
  c.y = add(c.g, OpKind::kAdd, {c.resid, c.act});
  return c;
}

TEST(MatmulFusion, FoldsBiasActivationAndResidual) {
  const Chain c = make_chain(GgmlType::kQ8_0, 64, 16, 3, OpKind::kGelu);
  std::vector<bool> keep(c.g.size(), false);
  keep[c.y] = true;
  const auto f = cpu::find_matmul_fusions(c.g, keep);
  EXPECT_EQ(f.chain[c.mm].bias, c.bias);
  EXPECT_EQ(f.chain[c.mm].act, cpu::MatmulEpilogue::Act::kGelu);
  EXPECT_EQ(f.chain[c.mm].resid, c.resid);
  EXPECT_EQ(f.chain[c.mm].last, c.y);
  for (NodeId id : {c.biased, c.act, c.y}) EXPECT_EQ(f.into[id], c.mm);
  EXPECT_EQ(f.into[c.mm], c.mm);
}

TEST(MatmulFusion, StopsAtOutputsSecondReadersAndLateOperands) {
  {  // the matmul is an output: nothing folded
    const Chain c = make_chain(GgmlType::kQ8_0, 64, 16, 3, OpKind::kGelu);
    std::vector<bool> keep(c.g.size(), false);
    keep[c.y] = keep[c.mm] = true;
    const auto f = cpu::find_matmul_fusions(c.g, keep);
    EXPECT_EQ(f.chain[c.mm].last, MatmulChain::kNone);
    for (NodeId id = 0; id < c.g.size(); ++id) EXPECT_EQ(f.into[id], id);
  }
  {  // the biased value has a second reader: only the bias add is folded
    Chain c = make_chain(GgmlType::kQ8_0, 64, 16, 3, OpKind::kGelu);
    const NodeId other = add(c.g, OpKind::kSilu, {c.biased});
    std::vector<bool> keep(c.g.size(), false);
    keep[c.y] = keep[other] = true;
    const auto f = cpu::find_matmul_fusions(c.g, keep);
    EXPECT_EQ(f.chain[c.mm].last, c.biased);
    EXPECT_EQ(f.chain[c.mm].act, cpu::MatmulEpilogue::Act::kNone);
    EXPECT_EQ(f.into[c.act], c.act);
  }
  {  // the residual operand is computed after the matmul: not folded
    Graph g;
    const NodeId x = g.add_input(make_desc(kF32, 64, 3), "x");
    const NodeId w = g.add_weight(make_desc(GgmlType::kQ8_0, 64, 16), "w");
    const NodeId r = g.add_input(make_desc(kF32, 16, 3), "r");
    const NodeId mm = add(g, OpKind::kMatMul, {w, x});
    const NodeId late = add(g, OpKind::kSilu, {r});
    const NodeId y = add(g, OpKind::kAdd, {mm, late});
    std::vector<bool> keep(g.size(), false);
    keep[y] = true;
    const auto f = cpu::find_matmul_fusions(g, keep);
    EXPECT_EQ(f.chain[mm].last, MatmulChain::kNone);
    EXPECT_EQ(f.into[y], y);
  }
}

// The folded chain's output equals the unfolded one's bit for bit: row kernels (F16, Q6_K) and
// packed ones (Q8_0, Q4_0), GEMV and GEMM, both activations, a row count that leaves a partial
// packed group, every SIMD level of this CPU (kept small: it also runs under qemu).
TEST(MatmulFusion, SameBitsAsTheOpsOneByOne) {
  const int64_t k = 256, n = 44;
  const GgmlType types[] = {kF16, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ6_K};
  for (::geniex::cpu::Isa isa : ::geniex::cpu::available_isas()) {
    SCOPED_TRACE(::geniex::cpu::isa_name(isa));
    CpuBackendOptions o{3};
    o.isa = isa;
    auto be = make_cpu_backend(o);
    ASSERT_TRUE(be.ok());
    for (size_t ti = 0; ti < std::size(types); ++ti) {
      const GgmlType wt = types[ti];
      const OpKind act = ti % 2 == 0 ? OpKind::kGelu : OpKind::kGeluErf;
      for (int64_t m : {int64_t{1}, int64_t{70}}) {
        const Chain c = make_chain(wt, k, n, m, act);
        const auto x = gaussian(sz(k * m), 1.0f, 11);
        const auto resid = gaussian(sz(n * m), 1.0f, 12);
        const auto bias = gaussian(sz(n), 1.0f, 13);
        const auto wb = make_weight(wt, k, n, 14);
        Bindings b;
        b.bind_input(c.x, std::span<const float>(x));
        b.bind_input(c.resid, std::span<const float>(resid));
        b.bind_weight(c.w, wt, wb);
        b.bind_weight(c.bias, kF32, bytes_of(bias));
        std::vector<float> fused(sz(n * m)), plain(fused.size()), mm(fused.size());
        Bindings fb = b;
        fb.bind_output(c.y, fused);
        ASSERT_TRUE((*be)->run(c.g, fb).ok());
        Bindings pb = b;  // the matmul bound as an output: each op runs on its own
        pb.bind_output(c.y, plain);
        pb.bind_output(c.mm, mm);
        ASSERT_TRUE((*be)->run(c.g, pb).ok());
        ASSERT_EQ(0, std::memcmp(fused.data(), plain.data(), fused.size() * sizeof(float)))
            << ggml_type_name(wt) << " " << graph::op_name(act) << " m=" << m;
      }
    }
  }
  ::geniex::cpu::set_isa_cap(std::nullopt);
}

}  // namespace
}  // namespace geniex::backends
