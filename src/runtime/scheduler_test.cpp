// Scheduler placement over fake backends: preference order, pinning, fallback with reasons,
// errors, and that run() reaches the chosen backend.
#include "runtime/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace geniex::runtime {
namespace {

using backends::Backend;
using backends::DeviceKind;
using backends::OpSupport;
using backends::Support;
using graph::Graph;
using graph::make_desc;
using graph::NodeId;
using graph::OpKind;

// A backend that runs everything except the op kinds in `unsupported`, and counts runs.
class FakeBackend final : public Backend {
 public:
  FakeBackend(std::string name, DeviceKind kind, std::set<OpKind> unsupported = {},
              Status result = {})
      : name_(std::move(name)),
        kind_(kind),
        unsupported_(std::move(unsupported)),
        result_(std::move(result)) {}

  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] DeviceKind kind() const override { return kind_; }
  [[nodiscard]] OpSupport supports(const Graph& g, NodeId id) const override {
    ++support_queries;
    const auto& n = g.node(id);
    if (n.role == graph::NodeRole::kOp && unsupported_.count(n.op) != 0) {
      return {Support::kUnsupported,
              "no " + std::string(graph::op_name(n.op)) + " kernel on " + name_};
    }
    if (n.role == graph::NodeRole::kOp && n.op == OpKind::kSoftcap) {
      return {Support::kEmulated, "softcap through the reference"};
    }
    return {Support::kNative, {}};
  }
  Status run(const Graph& g, const graph::Bindings&) override {
    ++runs;
    last_graph_size = g.size();
    return result_;
  }

  int runs = 0;
  size_t last_graph_size = 0;
  mutable int support_queries = 0;

 private:
  std::string name_;
  DeviceKind kind_;
  std::set<OpKind> unsupported_;
  Status result_;
};

// x -> rms_norm -> rope -> softcap (an emulated op, which never blocks placement).
Graph test_graph() {
  Graph g;
  NodeId x = g.add_input(make_desc(GgmlType::kF32, 8, 2, 3), "x");
  NodeId pos = g.add_input(make_desc(GgmlType::kI32, 3), "pos");
  auto n = g.add_op(OpKind::kRmsNorm, {x}, {}, "attn_norm");
  EXPECT_TRUE(n.ok());
  auto r = g.add_op(OpKind::kRope, {*n, pos}, {}, "rope_q");
  EXPECT_TRUE(r.ok());
  graph::OpParams cap;
  cap.scale = 30.0f;
  auto s = g.add_op(OpKind::kSoftcap, {*r}, cap, "final_softcap");
  EXPECT_TRUE(s.ok());
  return g;
}

// Three fake units; raw pointers stay valid while the scheduler owns them.
struct Units {
  FakeBackend* cpu = nullptr;
  FakeBackend* gpu = nullptr;
  FakeBackend* npu = nullptr;
  std::vector<std::unique_ptr<Backend>> list;
};

Units units(std::set<OpKind> gpu_unsupported = {}, std::set<OpKind> npu_unsupported = {},
            std::set<OpKind> cpu_unsupported = {}) {
  Units u;
  // Deliberately listed out of preference order.
  auto cpu =
      std::make_unique<FakeBackend>("fake-cpu", DeviceKind::kCpu, std::move(cpu_unsupported));
  auto gpu =
      std::make_unique<FakeBackend>("fake-gpu", DeviceKind::kGpu, std::move(gpu_unsupported));
  auto npu =
      std::make_unique<FakeBackend>("fake-npu", DeviceKind::kNpu, std::move(npu_unsupported));
  u.cpu = cpu.get();
  u.gpu = gpu.get();
  u.npu = npu.get();
  u.list.push_back(std::move(cpu));
  u.list.push_back(std::move(gpu));
  u.list.push_back(std::move(npu));
  return u;
}

TEST(Scheduler, EmptyBackendListIsInvalidArgument) {
  auto s = Scheduler::create({}, DevicePreference::kAuto);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
}

TEST(Scheduler, AutoPrefersNpuThenGpuThenCpu) {
  const Graph g = test_graph();
  {
    Units u = units();
    auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->preference(), DevicePreference::kAuto);
    auto p = s->place(g);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(p->backend, "fake-npu");
    EXPECT_TRUE(p->notes.empty());
    EXPECT_FALSE(p->stage.empty());
  }
  {
    // Without an NPU the GPU comes first.
    auto cpu = std::make_unique<FakeBackend>("fake-cpu", DeviceKind::kCpu);
    auto gpu = std::make_unique<FakeBackend>("fake-gpu", DeviceKind::kGpu);
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(std::move(cpu));
    list.push_back(std::move(gpu));
    auto s = Scheduler::create(std::move(list), DevicePreference::kAuto);
    ASSERT_TRUE(s.ok());
    auto p = s->place(g);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->backend, "fake-gpu");
  }
  {
    // CPU only.
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(std::make_unique<FakeBackend>("fake-cpu", DeviceKind::kCpu));
    auto s = Scheduler::create(std::move(list), DevicePreference::kAuto);
    ASSERT_TRUE(s.ok());
    auto p = s->place(g);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->backend, "fake-cpu");
  }
}

TEST(Scheduler, PinnedCpuIgnoresFasterUnits) {
  const Graph g = test_graph();
  Units u = units();
  FakeBackend* cpu = u.cpu;
  FakeBackend* gpu = u.gpu;
  FakeBackend* npu = u.npu;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kCpu);
  ASSERT_TRUE(s.ok());
  auto p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->backend, "fake-cpu");
  EXPECT_TRUE(p->notes.empty());
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(cpu->runs, 1);
  EXPECT_EQ(gpu->runs, 0);
  EXPECT_EQ(npu->runs, 0);
  EXPECT_EQ(gpu->support_queries, 0) << "a pinned CPU never asks the GPU";
}

TEST(Scheduler, PinnedCpuDoesNotFallBackToOtherUnits) {
  const Graph g = test_graph();
  Units u = units({}, {}, {OpKind::kRope});
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kCpu);
  ASSERT_TRUE(s.ok());
  auto p = s->place(g);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);
}

TEST(Scheduler, PinnedGpuFallsBackToCpuWhenAnOpIsUnsupported) {
  const Graph g = test_graph();
  Units u = units({OpKind::kRope});
  FakeBackend* cpu = u.cpu;
  FakeBackend* gpu = u.gpu;
  FakeBackend* npu = u.npu;
  std::vector<std::string> log;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kGpu,
                             [&](const std::string& line) { log.push_back(line); });
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(cpu->runs, 1);
  EXPECT_EQ(gpu->runs, 0);
  EXPECT_EQ(npu->runs, 0);
  EXPECT_EQ(npu->support_queries, 0) << "a pinned GPU never tries the NPU";
  const Placement& p = s->last_placement();
  EXPECT_EQ(p.backend, "fake-cpu");
  ASSERT_EQ(p.notes.size(), 1u);
  // The note names the unit, the op (kind and node name) and the backend's reason.
  EXPECT_NE(p.notes[0].find("fake-gpu"), std::string::npos) << p.notes[0];
  EXPECT_NE(p.notes[0].find("Rope"), std::string::npos) << p.notes[0];
  EXPECT_NE(p.notes[0].find("rope_q"), std::string::npos) << p.notes[0];
  EXPECT_NE(p.notes[0].find("no Rope kernel on fake-gpu"), std::string::npos) << p.notes[0];
  // The log says where the graph went and why the GPU was passed over.
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("fake-cpu"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("fake-gpu"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("Rope"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("no Rope kernel"), std::string::npos) << log[0];
  // The same decision again is not logged again.
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(cpu->runs, 2);
  EXPECT_EQ(log.size(), 1u);
}

TEST(Scheduler, AutoFallsDownTheChainOneUnitAtATime) {
  const Graph g = test_graph();
  // NPU lacks RmsNorm, GPU lacks Rope: CPU runs it, with a note for each unit skipped.
  Units u = units({OpKind::kRope}, {OpKind::kRmsNorm});
  FakeBackend* cpu = u.cpu;
  std::vector<std::string> log;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto,
                             [&](const std::string& line) { log.push_back(line); });
  ASSERT_TRUE(s.ok());
  auto p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->backend, "fake-cpu");
  ASSERT_EQ(p->notes.size(), 2u);
  EXPECT_NE(p->notes[0].find("fake-npu"), std::string::npos) << p->notes[0];
  EXPECT_NE(p->notes[0].find("RmsNorm"), std::string::npos) << p->notes[0];
  EXPECT_NE(p->notes[0].find("attn_norm"), std::string::npos) << p->notes[0];
  EXPECT_NE(p->notes[1].find("fake-gpu"), std::string::npos) << p->notes[1];
  EXPECT_NE(p->notes[1].find("Rope"), std::string::npos) << p->notes[1];
  EXPECT_TRUE(log.empty()) << "place() alone does not log";
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(cpu->runs, 1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("RmsNorm"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("Rope"), std::string::npos) << log[0];
}

TEST(Scheduler, EmulatedOpsDoNotBlockPlacement) {
  // Every fake answers kEmulated for Softcap; the NPU still gets the graph.
  const Graph g = test_graph();
  Units u = units();
  FakeBackend* npu = u.npu;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kNpu);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(npu->runs, 1);
  EXPECT_EQ(s->last_placement().backend, "fake-npu");
}

TEST(Scheduler, PinnedUnitMissingFromTheBuildIsNoted) {
  const Graph g = test_graph();
  std::vector<std::unique_ptr<Backend>> list;
  auto cpu = std::make_unique<FakeBackend>("fake-cpu", DeviceKind::kCpu);
  FakeBackend* c = cpu.get();
  list.push_back(std::move(cpu));
  std::vector<std::string> log;
  auto s = Scheduler::create(std::move(list), DevicePreference::kNpu,
                             [&](const std::string& line) { log.push_back(line); });
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(c->runs, 1);
  const Placement& p = s->last_placement();
  EXPECT_EQ(p.backend, "fake-cpu");
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("npu"), std::string::npos) << p.notes[0];
  EXPECT_NE(p.notes[0].find("no backend"), std::string::npos) << p.notes[0];
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("no backend"), std::string::npos) << log[0];
}

TEST(Scheduler, NothingCanRunIsUnimplementedNamingTheOp) {
  const Graph g = test_graph();
  Units u = units({OpKind::kRope}, {OpKind::kRope}, {OpKind::kRope});
  FakeBackend* cpu = u.cpu;
  FakeBackend* gpu = u.gpu;
  FakeBackend* npu = u.npu;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto);
  ASSERT_TRUE(s.ok());
  auto p = s->place(g);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(p.status().message().find("Rope"), std::string::npos) << p.status().to_string();
  EXPECT_NE(p.status().message().find("fake-cpu"), std::string::npos) << p.status().to_string();
  const Status r = s->run(g, graph::Bindings{});
  EXPECT_EQ(r.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(cpu->runs + gpu->runs + npu->runs, 0);
}

TEST(Scheduler, RunReturnsTheBackendsStatusAndReachesItsRun) {
  const Graph g = test_graph();
  std::vector<std::unique_ptr<Backend>> list;
  auto gpu = std::make_unique<FakeBackend>("fake-gpu", DeviceKind::kGpu, std::set<OpKind>{},
                                           out_of_range("gpu says no"));
  FakeBackend* gp = gpu.get();
  list.push_back(std::make_unique<FakeBackend>("fake-cpu", DeviceKind::kCpu));
  list.push_back(std::move(gpu));
  auto s = Scheduler::create(std::move(list), DevicePreference::kAuto);
  ASSERT_TRUE(s.ok());
  const Status r = s->run(g, graph::Bindings{});
  EXPECT_EQ(r.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(r.message(), "gpu says no");
  EXPECT_EQ(gp->runs, 1);
  EXPECT_EQ(gp->last_graph_size, g.size());
}

TEST(Scheduler, PlacementFollowsTheGraph) {
  // A graph the GPU can run goes to the GPU; the next one (with Rope) falls back to the CPU,
  // and the change of decision is logged again.
  Units u = units({OpKind::kRope});
  FakeBackend* cpu = u.cpu;
  FakeBackend* gpu = u.gpu;
  std::vector<std::string> log;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kGpu,
                             [&](const std::string& line) { log.push_back(line); });
  ASSERT_TRUE(s.ok());
  Graph plain;
  NodeId x = plain.add_input(make_desc(GgmlType::kF32, 4), "x");
  ASSERT_TRUE(plain.add_op(OpKind::kSilu, {x}).ok());
  ASSERT_TRUE(s->run(plain, graph::Bindings{}).ok());
  EXPECT_EQ(gpu->runs, 1);
  EXPECT_EQ(s->last_placement().backend, "fake-gpu");
  const Graph g = test_graph();
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(cpu->runs, 1);
  EXPECT_EQ(s->last_placement().backend, "fake-cpu");
  EXPECT_EQ(log.size(), 2u);
}

TEST(Scheduler, PreferenceNames) {
  EXPECT_EQ(device_preference_name(DevicePreference::kAuto), "auto");
  EXPECT_EQ(device_preference_name(DevicePreference::kCpu), "cpu");
  EXPECT_EQ(device_preference_name(DevicePreference::kGpu), "gpu");
  EXPECT_EQ(device_preference_name(DevicePreference::kNpu), "npu");
}

}  // namespace
}  // namespace geniex::runtime
