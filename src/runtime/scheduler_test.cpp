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

// A layered graph as models build it: embedding (kInput), `n_layers` layers (kLayer), output
// head (kOutput), each stage one or two F32 ops.
Graph layered_graph(int32_t n_layers) {
  Graph g;
  const NodeId ids = g.add_input(make_desc(GgmlType::kI32, 2), "ids");
  const NodeId tab = g.add_weight(make_desc(GgmlType::kF32, 8, 16), "tok_embd");
  g.begin_stage(0, "embedding", graph::StageKind::kInput);
  auto x = g.add_op(OpKind::kEmbedding, {tab, ids}, {}, "embed");
  EXPECT_TRUE(x.ok());
  for (int32_t l = 0; l < n_layers; ++l) {
    g.begin_stage(l + 1, "layer " + std::to_string(l), graph::StageKind::kLayer, l);
    x = g.add_op(OpKind::kRmsNorm, {*x}, {}, "attn_norm." + std::to_string(l));
    EXPECT_TRUE(x.ok());
  }
  g.begin_stage(n_layers + 1, "output", graph::StageKind::kOutput);
  x = g.add_op(OpKind::kRmsNorm, {*x}, {}, "output_norm");
  EXPECT_TRUE(x.ok());
  return g;
}

std::string segments_text(const Placement& p) {
  std::string out;
  for (const auto& s : p.segments) out += (out.empty() ? "" : ", ") + s.label + " -> " + s.backend;
  return out;
}

TEST(SchedulerOffload, TheLastNLayersAndTheHeadGoToTheAcceleratorTheRestToTheCpu) {
  const Graph g = layered_graph(4);
  ASSERT_EQ(g.n_layer_stages(), 4);
  Units u = units();
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kNpu);
  ASSERT_TRUE(s.ok());
  // Default: no limit, today's placement (everything on the first unit that can).
  EXPECT_EQ(s->offload_layers(), -1);
  auto p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->stage, "whole model");
  EXPECT_EQ(p->backend, "fake-npu");

  s->set_offload_layers(2);
  p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(segments_text(*p), "embedding .. layer 1 -> fake-cpu, layer 2 .. output -> fake-npu");
  EXPECT_EQ(p->backend, "fake-cpu + fake-npu");
  ASSERT_EQ(p->notes.size(), 1u);
  EXPECT_EQ(p->notes[0], "embedding, layer 0 .. layer 1 on the CPU: --offload-layers 2");

  s->set_offload_layers(1);
  p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(segments_text(*p), "embedding .. layer 2 -> fake-cpu, layer 3 .. output -> fake-npu");
}

TEST(SchedulerOffload, ZeroKeepsAllOnTheCpuAndMoreThanTheLayersKeepsOnlyTheEmbedding) {
  const Graph g = layered_graph(3);
  Units u = units();
  FakeBackend* cpu = u.cpu;
  FakeBackend* npu = u.npu;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kNpu);
  ASSERT_TRUE(s.ok());
  s->set_offload_layers(0);
  auto p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->stage, "whole model");
  EXPECT_EQ(p->backend, "fake-cpu");
  ASSERT_EQ(p->notes.size(), 1u);
  EXPECT_EQ(p->notes[0], "embedding, layer 0 .. layer 2, output on the CPU: --offload-layers 0");
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(cpu->runs, 1);
  EXPECT_EQ(npu->runs, 0);

  for (int32_t n : {3, 4, 1000}) {
    s->set_offload_layers(n);
    p = s->place(g);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(segments_text(*p), "embedding -> fake-cpu, layer 0 .. output -> fake-npu") << n;
    ASSERT_EQ(p->notes.size(), 1u);
    EXPECT_EQ(p->notes[0], "embedding on the CPU: --offload-layers " + std::to_string(n));
  }
  // A negative value is "no limit".
  s->set_offload_layers(-5);
  EXPECT_EQ(s->offload_layers(), -1);
  p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->backend, "fake-npu");
  EXPECT_TRUE(p->notes.empty());
}

TEST(SchedulerOffload, PinnedCpuAndUnlayeredGraphsAreUnaffected) {
  // A pinned CPU needs no note; a graph without layer stages (a vision encoder) keeps the
  // device preference whatever the limit.
  Units u = units();
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kCpu);
  ASSERT_TRUE(s.ok());
  s->set_offload_layers(1);
  auto p = s->place(layered_graph(3));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->backend, "fake-cpu");
  EXPECT_TRUE(p->notes.empty());

  Units v = units();
  auto t = Scheduler::create(std::move(v.list), DevicePreference::kGpu);
  ASSERT_TRUE(t.ok());
  t->set_offload_layers(0);
  p = t->place(test_graph());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->backend, "fake-gpu");
  EXPECT_TRUE(p->notes.empty());
}

TEST(SchedulerOffload, CapabilityFallbackStillAppliesToTheOffloadedLayers) {
  // The NPU cannot run RmsNorm: the offloaded stages fall to the GPU, the rest stay on the CPU.
  const Graph g = layered_graph(4);
  Units u = units({}, {OpKind::kRmsNorm});
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto);
  ASSERT_TRUE(s.ok());
  s->set_offload_layers(2);
  auto p = s->place(g);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(segments_text(*p), "embedding .. layer 1 -> fake-cpu, layer 2 .. output -> fake-gpu");
  ASSERT_EQ(p->notes.size(), 2u);
  EXPECT_NE(p->notes[0].find("layer 2 .. output: fake-npu cannot run RmsNorm"), std::string::npos)
      << p->notes[0];
  EXPECT_EQ(p->notes[1], "embedding, layer 0 .. layer 1 on the CPU: --offload-layers 2");
}

TEST(SchedulerOffload, ARunTimeFailureMovesOnlyTheOffloadedStagesDown) {
  const Graph g = layered_graph(4);
  std::vector<std::unique_ptr<Backend>> list;
  auto npu = std::make_unique<FakeBackend>("fake-npu", DeviceKind::kNpu, std::set<OpKind>{},
                                           internal_error("npu broke"));
  auto cpu = std::make_unique<FakeBackend>("fake-cpu", DeviceKind::kCpu);
  FakeBackend* np = npu.get();
  FakeBackend* cp = cpu.get();
  list.push_back(std::move(npu));
  list.push_back(std::move(cpu));
  std::vector<std::string> log;
  auto s = Scheduler::create(std::move(list), DevicePreference::kNpu,
                             [&](const std::string& line) { log.push_back(line); });
  ASSERT_TRUE(s.ok());
  s->set_offload_layers(2);
  ASSERT_TRUE(s->run(g, graph::Bindings{}).ok());
  EXPECT_EQ(s->fallbacks(), 1);
  EXPECT_GE(np->runs, 1);
  EXPECT_GE(cp->runs, 1);
  EXPECT_EQ(s->last_placement().backend, "fake-cpu");
  bool moved = false;
  for (const auto& l : log)
    moved = moved || l.find("layer 2 .. output moves off fake-npu") != std::string::npos;
  EXPECT_TRUE(moved) << (log.empty() ? "" : log.back());
}

TEST(SchedulerOffload, ExplainShowsTheSegmentsAndTheNote) {
  const Graph g = layered_graph(3);
  Units u = units();
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kNpu);
  ASSERT_TRUE(s.ok());
  s->set_offload_layers(1);
  const std::string e = s->explain(g);
  EXPECT_NE(e.find("  embedding .. layer 1 -> fake-cpu\n"), std::string::npos) << e;
  EXPECT_NE(e.find("  layer 2 .. output -> fake-npu\n"), std::string::npos) << e;
  EXPECT_NE(e.find("  note: embedding, layer 0 .. layer 1 on the CPU: --offload-layers 1\n"),
            std::string::npos)
      << e;
}

TEST(Scheduler, PreferenceNames) {
  EXPECT_EQ(device_preference_name(DevicePreference::kAuto), "auto");
  EXPECT_EQ(device_preference_name(DevicePreference::kCpu), "cpu");
  EXPECT_EQ(device_preference_name(DevicePreference::kGpu), "gpu");
  EXPECT_EQ(device_preference_name(DevicePreference::kNpu), "npu");
}

}  // namespace
}  // namespace geniex::runtime
