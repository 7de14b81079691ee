// Stage placement and cut graphs: a three-stage graph (embedding / layer with a KV state /
// output head) runs split across units that compute with the reference ops, and must equal the
// uncut run bit for bit; run-time fallback, caller hook failures, concurrency of independent
// segments, prepare of the next segment, and the explain table.
#include "runtime/stage_plan.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/scheduler.h"

namespace geniex::runtime {
namespace {

using backends::Backend;
using backends::DeviceKind;
using backends::OpSupport;
using backends::Support;
using graph::Bindings;
using graph::Graph;
using graph::make_desc;
using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

constexpr GgmlType kF32 = GgmlType::kF32;
constexpr GgmlType kI32 = GgmlType::kI32;

// A unit that computes with the reference ops; it can lack op kinds, fail its first runs, and
// meet another unit inside run() (to prove two segments run at the same time).
class RefUnit final : public Backend {
 public:
  RefUnit(std::string name, DeviceKind kind, std::set<OpKind> lacks = {})
      : name_(std::move(name)), kind_(kind), lacks_(std::move(lacks)) {}
  [[nodiscard]] std::string name() const override { return name_; }
  [[nodiscard]] DeviceKind kind() const override { return kind_; }
  [[nodiscard]] OpSupport supports(const Graph& g, NodeId id) const override {
    if (lacks_.count(g.node(id).op) != 0) return {Support::kUnsupported, "not in " + name_};
    return {Support::kNative, {}};
  }
  Status run(const Graph& g, const Bindings& b) override {
    ++runs;
    nodes_run += static_cast<int>(g.size());
    if (fail_runs > 0) {
      --fail_runs;
      return resource_exhausted(name_ + ": out of device memory");
    }
    if (meet != nullptr) GENIEX_TRY(meet->arrive_and_wait());
    return graph::run_reference(g, b);
  }
  Status prepare(const Graph&, const Bindings&) override {
    ++prepares;
    return {};
  }

  // Two units rendezvous: each waits (bounded) until the other is inside run() too.
  struct Meeting {
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    Status arrive_and_wait() {
      std::unique_lock<std::mutex> lock(mu);
      ++arrived;
      cv.notify_all();
      if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived >= 2; })) {
        return internal_error("the other segment never ran concurrently");
      }
      return {};
    }
  };

  int runs = 0;
  int nodes_run = 0;
  int prepares = 0;
  int fail_runs = 0;
  Meeting* meet = nullptr;

 private:
  std::string name_;
  DeviceKind kind_;
  std::set<OpKind> lacks_;
};

constexpr int64_t kE = 32, kV = 11, kT = 3, kS = 8;

// embedding | rms_norm, matmul, cache write, attention over the state, residual | norm, head.
struct Model {
  Graph g;
  NodeId table, ids, nw, wk, state, slots, qpos, kpos, krows, ow, logits;
  std::vector<float> table_f, nw_f, wk_f, ow_f;
  std::vector<int32_t> ids_v = {4, 1, 9}, slots_v = {5, 2, 7}, pos_v = {0, 1, 2};
};

std::vector<float> values(size_t n, float scale, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = scale * (static_cast<float>(x >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

std::span<const uint8_t> bytes(const std::vector<float>& f) {
  return {reinterpret_cast<const uint8_t*>(f.data()), f.size() * sizeof(float)};
}

std::unique_ptr<Model> make_model() {
  auto m = std::make_unique<Model>();
  Graph& g = m->g;
  g.set_batch_tokens(kT);
  m->table = g.add_weight(make_desc(kF32, kE, kV), "token_embd");
  m->ids = g.add_input(make_desc(kI32, kT), "ids");
  m->nw = g.add_weight(make_desc(kF32, kE), "attn_norm");
  m->wk = g.add_weight(make_desc(kF32, kE, kE), "attn_k");
  m->state = g.add_state(make_desc(kF32, kE, 1, kS), "cache_k.0");
  m->slots = g.add_input(make_desc(kI32, kT), "kv_slots.0");
  m->qpos = g.add_input(make_desc(kI32, kT), "positions");
  m->kpos = g.add_input(make_desc(kI32, kT), "kv_pos.0");
  m->krows = g.add_input(make_desc(kI32, kT), "kv_rows.0");
  m->ow = g.add_weight(make_desc(kF32, kE, kV), "output");
  g.begin_stage(0, "embedding");
  NodeId x = *g.add_op(OpKind::kEmbedding, {m->table, m->ids}, {}, "embd");
  g.begin_stage(1, "layer 0");
  NodeId n = *g.add_op(OpKind::kRmsNorm, {x, m->nw}, {}, "attn_norm.0");
  NodeId k = *g.add_op(OpKind::kMatMul, {m->wk, n}, {}, "k.0");
  OpParams r3;
  r3.ne = {kE, 1, kT, 1};
  NodeId k3 = *g.add_op(OpKind::kReshape, {k}, r3, "k3.0");
  NodeId q3 = *g.add_op(OpKind::kReshape, {n}, r3, "q3.0");
  NodeId cw = *g.add_op(OpKind::kCacheWrite, {m->state, k3, m->slots}, {}, "cache_write.0");
  OpParams ap;
  ap.attn.scale = 0.2f;
  NodeId att = *g.add_op(OpKind::kAttention, {q3, cw, cw, m->qpos, m->kpos, m->krows}, ap, "att.0");
  OpParams r2;
  r2.ne = {kE, kT, 1, 1};
  NodeId a2 = *g.add_op(OpKind::kReshape, {att}, r2, "att2.0");
  NodeId x1 = *g.add_op(OpKind::kAdd, {x, a2}, {}, "residual.0");
  g.begin_stage(2, "output");
  NodeId on = *g.add_op(OpKind::kRmsNorm, {x1}, {}, "output_norm");
  m->logits = *g.add_op(OpKind::kMatMul, {m->ow, on}, {}, "logits");
  m->table_f = values(size_t(kE * kV), 2.0f, 1);
  m->nw_f = values(size_t(kE), 1.0f, 2);
  m->wk_f = values(size_t(kE * kE), 0.5f, 3);
  m->ow_f = values(size_t(kE * kV), 0.5f, 4);
  return m;
}

Bindings make_bindings(const Model& m, std::vector<float>& state, std::vector<float>& logits) {
  Bindings b;
  b.bind_weight(m.table, kF32, bytes(m.table_f));
  b.bind_weight(m.nw, kF32, bytes(m.nw_f));
  b.bind_weight(m.wk, kF32, bytes(m.wk_f));
  b.bind_weight(m.ow, kF32, bytes(m.ow_f));
  b.bind_input(m.ids, std::span<const int32_t>(m.ids_v));
  b.bind_input(m.slots, std::span<const int32_t>(m.slots_v));
  b.bind_input(m.qpos, std::span<const int32_t>(m.pos_v));
  b.bind_input(m.kpos, std::span<const int32_t>(m.pos_v));
  b.bind_input(m.krows, std::span<const int32_t>(m.slots_v));
  b.bind_state(m.state, kF32, {reinterpret_cast<uint8_t*>(state.data()), state.size() * 4});
  b.bind_output(m.logits, std::span<float>(logits));
  return b;
}

// The uncut reference run.
void reference(const Model& m, std::vector<float>& state, std::vector<float>& logits) {
  state.assign(size_t(kE * kS), 0.0f);
  logits.assign(size_t(kV * kT), 0.0f);
  ASSERT_TRUE(graph::run_reference(m.g, make_bindings(m, state, logits)).ok());
}

struct Units {
  RefUnit *cpu, *gpu, *npu;
  std::vector<std::unique_ptr<Backend>> list;
};

Units units(std::set<OpKind> npu_lacks, std::set<OpKind> gpu_lacks = {}) {
  Units u;
  auto c = std::make_unique<RefUnit>("ref-cpu", DeviceKind::kCpu);
  auto gp = std::make_unique<RefUnit>("ref-gpu", DeviceKind::kGpu, std::move(gpu_lacks));
  auto n = std::make_unique<RefUnit>("ref-npu", DeviceKind::kNpu, std::move(npu_lacks));
  u.cpu = c.get();
  u.gpu = gp.get();
  u.npu = n.get();
  u.list.push_back(std::move(c));
  u.list.push_back(std::move(gp));
  u.list.push_back(std::move(n));
  return u;
}

TEST(StagedScheduler, StagesSplitAcrossUnitsEqualTheUncutRun) {
  auto m = make_model();
  std::vector<float> want_state, want_logits;
  reference(*m, want_state, want_logits);

  // The NPU lacks Embedding and Attention, the GPU lacks RmsNorm: embedding -> GPU, layer ->
  // CPU (both preferred units lack something there), output -> NPU.
  Units u = units({OpKind::kEmbedding, OpKind::kAttention}, {OpKind::kRmsNorm});
  RefUnit* npu = u.npu;
  RefUnit* gpu = u.gpu;
  RefUnit* cpu = u.cpu;
  std::vector<std::string> log;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto,
                             [&](const std::string& l) { log.push_back(l); });
  ASSERT_TRUE(s.ok());
  auto p = s->place(m->g);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->segments.size(), 3u);
  EXPECT_EQ(p->segments[0].label, "embedding");
  EXPECT_EQ(p->segments[0].backend, "ref-gpu");
  EXPECT_EQ(p->segments[1].label, "layer 0");
  EXPECT_EQ(p->segments[1].backend, "ref-cpu");
  EXPECT_EQ(p->segments[2].label, "output");
  EXPECT_EQ(p->segments[2].backend, "ref-npu");
  EXPECT_EQ(p->stage, "3 segments");
  EXPECT_EQ(p->backend, "ref-gpu + ref-cpu + ref-npu");
  // Each passed-over unit is noted with its stage, op, node and reason.
  std::string notes;
  for (const auto& n : p->notes) notes += n + "\n";
  EXPECT_NE(notes.find("embedding: ref-npu cannot run Embedding (embd): not in ref-npu"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("layer 0: ref-gpu cannot run RmsNorm (attn_norm.0)"), std::string::npos)
      << notes;

  for (int rep = 0; rep < 2; ++rep) {
    std::vector<float> state(size_t(kE * kS), 0.0f), logits(size_t(kV * kT), 0.0f);
    ASSERT_TRUE(s->run(m->g, make_bindings(*m, state, logits)).ok());
    EXPECT_EQ(0, std::memcmp(logits.data(), want_logits.data(), logits.size() * 4));
    EXPECT_EQ(0, std::memcmp(state.data(), want_state.data(), state.size() * 4))
        << "the KV state written by the CPU segment";
  }
  EXPECT_EQ(npu->runs, 2);
  EXPECT_EQ(gpu->runs, 2);
  EXPECT_EQ(cpu->runs, 2);
  EXPECT_LT(npu->nodes_run, 2 * static_cast<int>(m->g.size())) << "the NPU got a sub-graph";
  ASSERT_EQ(log.size(), 1u) << "one placement, logged once";
  EXPECT_NE(log[0].find("embedding -> ref-gpu, layer 0 -> ref-cpu, output -> ref-npu"),
            std::string::npos)
      << log[0];
  // Profile: one entry per segment, boundary copies counted where values cross.
  const auto prof = s->profile();
  ASSERT_EQ(prof.size(), 3u);
  for (const auto& e : prof) EXPECT_EQ(e.runs, 2) << e.label;
  EXPECT_EQ(prof[0].bytes_in, 0);
  EXPECT_EQ(prof[0].bytes_out, 2 * kE * kT * 4) << "the embedding's output, read by the layer";
  EXPECT_EQ(prof[1].bytes_in, 2 * kE * kT * 4);
  EXPECT_GT(s->boundary_bytes(), 0);
  // The units after the first prepared their segments during the first run.
  EXPECT_EQ(cpu->prepares + npu->prepares, 2);
}

TEST(StagedScheduler, OneUnitForEveryStageRunsTheGraphUncut) {
  auto m = make_model();
  Units u = units({});
  RefUnit* npu = u.npu;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto);
  ASSERT_TRUE(s.ok());
  std::vector<float> state(size_t(kE * kS), 0.0f), logits(size_t(kV * kT));
  ASSERT_TRUE(s->run(m->g, make_bindings(*m, state, logits)).ok());
  EXPECT_EQ(npu->runs, 1);
  EXPECT_EQ(npu->nodes_run, static_cast<int>(m->g.size()));
  EXPECT_EQ(s->last_placement().stage, "whole model");
  EXPECT_EQ(s->boundary_bytes(), 0);
}

TEST(StagedScheduler, RunTimeFailureMovesTheStagesDownAndTheStepStillComputesCorrectly) {
  auto m = make_model();
  std::vector<float> want_state, want_logits;
  reference(*m, want_state, want_logits);
  Units u = units({OpKind::kEmbedding});  // embedding on the GPU, the rest on the NPU
  RefUnit* npu = u.npu;
  RefUnit* gpu = u.gpu;
  npu->fail_runs = 1;  // the NPU runs out of memory at its first run
  std::vector<std::string> log;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto,
                             [&](const std::string& l) { log.push_back(l); });
  ASSERT_TRUE(s.ok());
  std::vector<float> state(size_t(kE * kS), 0.0f), logits(size_t(kV * kT), 0.0f);
  ASSERT_TRUE(s->run(m->g, make_bindings(*m, state, logits)).ok());
  EXPECT_EQ(0, std::memcmp(logits.data(), want_logits.data(), logits.size() * 4));
  EXPECT_EQ(0, std::memcmp(state.data(), want_state.data(), state.size() * 4));
  EXPECT_EQ(s->fallbacks(), 1);
  EXPECT_EQ(npu->runs, 1);
  EXPECT_EQ(s->last_placement().stage, "whole model") << "everything on the GPU now";
  EXPECT_EQ(s->last_placement().backend, "ref-gpu");
  std::string all;
  for (const auto& l : log) all += l + "\n";
  EXPECT_NE(all.find("fallback: layer 0 .. output moves off ref-npu"), std::string::npos) << all;
  EXPECT_NE(all.find("out of device memory"), std::string::npos) << all;
  // Remembered: the next step does not try the NPU again.
  const int gpu_runs = gpu->runs;
  ASSERT_TRUE(s->run(m->g, make_bindings(*m, state, logits)).ok());
  EXPECT_EQ(npu->runs, 1);
  EXPECT_EQ(gpu->runs, gpu_runs + 1);
  const std::string ex = s->explain(m->g);
  EXPECT_NE(ex.find("failed here at run time"), std::string::npos) << ex;
}

TEST(StagedScheduler, TheLastUnitsFailureIsReturnedAsIs) {
  auto m = make_model();
  std::vector<std::unique_ptr<Backend>> list;
  auto c = std::make_unique<RefUnit>("ref-cpu", DeviceKind::kCpu);
  c->fail_runs = 1;
  list.push_back(std::move(c));
  auto s = Scheduler::create(std::move(list), DevicePreference::kCpu);
  ASSERT_TRUE(s.ok());
  std::vector<float> state(size_t(kE * kS), 0.0f), logits(size_t(kV * kT));
  const Status st = s->run(m->g, make_bindings(*m, state, logits));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s->fallbacks(), 0);
  EXPECT_TRUE(s->run(m->g, make_bindings(*m, state, logits)).ok()) << "and the unit stays usable";
}

TEST(StagedScheduler, ACallerHookFailureIsNotTheUnitsFault) {
  auto m = make_model();
  Units u = units({OpKind::kEmbedding});
  RefUnit* npu = u.npu;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto);
  ASSERT_TRUE(s.ok());
  std::vector<float> state(size_t(kE * kS), 0.0f), logits(size_t(kV * kT));
  Bindings b = make_bindings(*m, state, logits);
  // The hook on the layer's CacheWrite (node ids: find it by name) fails like a KV budget.
  NodeId cw = 0;
  for (NodeId id = 0; id < m->g.size(); ++id) {
    if (m->g.node(id).name == "cache_write.0") cw = id;
  }
  b.add_hook(cw, [] { return resource_exhausted("KV budget of 1 KiB is too small"); });
  const Status st = s->run(m->g, b);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("KV budget"), std::string::npos);
  EXPECT_EQ(s->fallbacks(), 0) << "no unit was blamed";
  EXPECT_EQ(npu->runs, 1);
}

TEST(StagedScheduler, IndependentSegmentsOnTwoUnitsRunConcurrently) {
  // Two branches that only meet at the end: branch A (stage 0) on the NPU, branch B (stage 1)
  // on the GPU (the NPU lacks Gelu), the join (stage 2) on the NPU. A and B each wait inside
  // run() for the other: they complete only if they run at the same time.
  Graph g;
  NodeId xa = g.add_input(make_desc(kF32, 16, 2), "a");
  NodeId xb = g.add_input(make_desc(kF32, 16, 2), "b");
  g.begin_stage(0, "branch a");
  NodeId ya = *g.add_op(OpKind::kSilu, {xa}, {}, "silu_a");
  g.begin_stage(1, "branch b");
  NodeId yb = *g.add_op(OpKind::kGelu, {xb}, {}, "gelu_b");
  g.begin_stage(2, "join");
  NodeId z = *g.add_op(OpKind::kMul, {ya, yb}, {}, "join");
  Units u = units({OpKind::kGelu});
  RefUnit::Meeting meeting;
  u.npu->meet = &meeting;
  u.gpu->meet = &meeting;
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto);
  ASSERT_TRUE(s.ok());
  const auto a = values(32, 4.0f, 7), bv = values(32, 4.0f, 8);
  std::vector<float> got(32), want(32);
  Bindings b;
  b.bind_input(xa, std::span<const float>(a));
  b.bind_input(xb, std::span<const float>(bv));
  b.bind_output(z, std::span<float>(got));
  Bindings r = b;
  r.bind_output(z, std::span<float>(want));
  ASSERT_TRUE(graph::run_reference(g, r).ok());
  // The join (on the NPU) arrives third and passes the open meeting.
  auto p = s->place(g);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->segments.size(), 3u);
  const Status st = s->run(g, b);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(meeting.arrived, 3) << "both branches met; the join passed the open meeting";
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4));
}

TEST(StagedScheduler, ACacheAliasCannotCrossAStageBoundary) {
  Graph g;
  NodeId st = g.add_state(make_desc(GgmlType::kF16, 32, 1, 4), "cache");
  NodeId src = g.add_input(make_desc(kF32, 32, 1, 2), "src");
  NodeId slots = g.add_input(make_desc(kI32, 2), "slots");
  NodeId pos = g.add_input(make_desc(kI32, 2), "pos");
  g.begin_stage(0, "write");
  NodeId cw = *g.add_op(OpKind::kCacheWrite, {st, src, slots});
  g.begin_stage(1, "read");
  ASSERT_TRUE(g.add_op(OpKind::kAttention, {src, cw, cw, pos, pos, slots}).ok());
  RefUnit a("a", DeviceKind::kNpu), c("c", DeviceKind::kCpu);
  auto plan = StagePlan::build(g, {&a, &c});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("not F32"), std::string::npos);
  EXPECT_TRUE(StagePlan::build(g, {&a, &a}).ok()) << "on one unit it is one segment";
}

TEST(StagedScheduler, ExplainPrintsTheCapabilityTableAndThePlacement) {
  auto m = make_model();
  Units u = units({OpKind::kEmbedding});
  auto s = Scheduler::create(std::move(u.list), DevicePreference::kAuto);
  ASSERT_TRUE(s.ok());
  const std::string ex = s->explain(m->g);
  EXPECT_NE(ex.find("units in preference order (auto): ref-npu [npu] ref-gpu [gpu] ref-cpu [cpu]"),
            std::string::npos)
      << ex;
  EXPECT_NE(ex.find("Embedding / F32 I32:  ref-npu=unsupported (not in ref-npu)  ref-gpu=native"),
            std::string::npos)
      << ex;
  EXPECT_NE(ex.find("MatMul / F32 F32:"), std::string::npos) << ex;
  EXPECT_NE(
      ex.find("placement (3-token step):\n  embedding -> ref-gpu\n  layer 0 .. output -> ref-npu"),
      std::string::npos)
      << ex;
}

}  // namespace
}  // namespace geniex::runtime
