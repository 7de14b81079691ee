#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/exec_plan.h"
#include "backends/cpu/kernels/gemv_tuning.h"
#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/vec_dot.h"
#include "backends/cpu/weight_cache.h"
#include "core/thread_pool.h"
#include "graph/ref_ops.h"
#include "quant/quant.h"

namespace geniex::backends {
namespace {

using graph::Node;
using graph::NodeId;
using graph::NodeRole;
using graph::OpKind;

size_t sz(int64_t v) { return static_cast<size_t>(v); }

std::string who(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return "node " + std::to_string(id) + (n.name.empty() ? std::string() : " '" + n.name + "'");
}

// The first error of a parallel loop (most loops never fail: no allocation on the good path).
class FirstError {
 public:
  void set(Status s) {
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = std::move(s);
  }
  Status take() { return std::move(status_); }

 private:
  std::mutex mu_;
  Status status_;
};

// The value of one node during a run.
struct Val {
  const float* f = nullptr;      // F32 data (op results, F32 inputs, F32 weights)
  const int32_t* i = nullptr;    // I32 inputs
  const uint8_t* raw = nullptr;  // weights / states (bytes of `type`)
  uint8_t* state = nullptr;      // writable bytes of a state
  size_t raw_size = 0;
  GgmlType type = GgmlType::kF32;
  // Weights, as the prepare step left them for their kernels (prepare_*_weights):
  const cpu::PackedMatrix* packed = nullptr;  // a matmul's packed copy (matmuls, tied tables)
  const uint8_t* bytes = nullptr;             // raw's huge-page copy, or raw; null: unprepared
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::unique_ptr<ThreadPool> pool, const CpuBackendOptions& options)
      : pool_(std::move(pool)), weights_(options.repack, options.huge_pages) {}

  [[nodiscard]] std::string name() const override {
    return "cpu(" + std::string(::geniex::cpu::isa_name(::geniex::cpu::detect_isa())) + ", " +
           std::to_string(pool_->size()) + " threads)";
  }
  [[nodiscard]] DeviceKind kind() const override { return DeviceKind::kCpu; }

  [[nodiscard]] OpSupport supports(const graph::Graph& g, NodeId id) const override {
    const Node& n = g.node(id);
    if (n.role != NodeRole::kOp) return {Support::kNative, {}};
    switch (n.op) {
      case OpKind::kMatMul: {
        const GgmlType t = g.node(n.inputs[0]).desc.dtype;
        if (!::geniex::cpu::dot_kernels(t)) {
          return {Support::kUnsupported,
                  "no dot kernel for " + std::string(ggml_type_name(t)) + " weights"};
        }
        return {Support::kNative, {}};
      }
      case OpKind::kEmbedding: {
        const GgmlType t = g.node(n.inputs[0]).desc.dtype;
        if (!quant::can_dequantize(t)) {
          return {Support::kUnsupported, "cannot dequantize " + std::string(ggml_type_name(t))};
        }
        return {Support::kNative, {}};
      }
      default: return {Support::kNative, {}};
    }
  }

  Status run(const graph::Graph& g, const graph::Bindings& b) override;
  void release_scratch() override {
    std::vector<float>().swap(arena_);
    std::vector<uint8_t>().swap(scratch_.act);
    std::vector<uint8_t>().swap(scratch_.act_packed);
    scratch_.act_held = {};
    scratch_.act_packed_held = {};
    std::vector<std::vector<float>>().swap(scratch_.per_thread);
    std::vector<std::vector<uint64_t>>().swap(scratch_.masks);
  }
  Status prepare(const graph::Graph& g, const graph::Bindings& b) override;

 private:
  Status bind(const graph::Graph& g, const graph::BindingsAccess& b);
  // Weight preparation: every weight of `g` (bound by bind()) in the form its ops' kernels read,
  // made at the first prepare for its bytes and kept in weights_; run_op only reads vals_. One
  // function per op family.
  Status prepare_weights(const graph::Graph& g);
  void prepare_matmul_weights(const graph::Graph& g, NodeId id);
  void prepare_embedding_weights(const graph::Graph& g, NodeId id);
  Status prepare_attention_weights(const graph::Graph& g, NodeId id);
  Status prepare_f32_weights(const graph::Graph& g, NodeId id, std::span<const size_t> inputs);
  // Input `in` of an op, when it is a non-F32 weight the op reads as F32: its dequantized copy.
  Status prepare_f32_weight(const graph::Graph& g, NodeId in);
  Result<const float*> f32_of(const graph::Graph& g, NodeId id);
  Status run_op(const graph::Graph& g, NodeId id, float* out);
  // Names a matmul's activation node for reuse of its quantization within this run (not with
  // hooks, which may rewrite values between ops).
  [[nodiscard]] cpu::ActSource act_source(NodeId id) const {
    return hooks_ ? cpu::ActSource{} : cpu::ActSource{run_gen_, id};
  }

  std::unique_ptr<ThreadPool> pool_;  ///< never null
  uint64_t run_gen_ = 0;              // counts runs (never 0 inside one)
  bool hooks_ = false;
  backends::cpu::Scratch scratch_;
  std::vector<float> arena_;
  std::vector<Val> vals_;
  std::vector<float*> out_direct_;  ///< per node: the caller's output buffer, if it is one
  cpu::ExecPlan plan_;
  uint64_t plan_key_ = 0;
  std::vector<NodeId> plan_outputs_;
  bool plan_hooks_ = false;
  // Element-wise ops folded into the matmul before them (none when hooks run: they may read or
  // rewrite every node's value).
  cpu::MatmulFusions fusions_;
  cpu::WeightCache weights_;
  // F32 values of non-F32 states and cache writes read as F32, by data address (remade at every
  // read: states change between ops).
  std::unordered_map<const uint8_t*, std::vector<float>> state_f32_;
};

Status CpuBackend::bind(const graph::Graph& g, const graph::BindingsAccess& b) {
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    Val& v = vals_[id];
    if (n.role == NodeRole::kOp) continue;
    const size_t count = sz(n.desc.nelements());
    if (n.role == NodeRole::kWeight || n.role == NodeRole::kState) {
      const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
      const size_t need = row ? *row * sz(n.desc.nrows()) : 0;
      if (n.role == NodeRole::kWeight) {
        auto it = b.weights().find(id);
        if (it == b.weights().end()) return invalid_argument(who(g, id) + ": weight is not bound");
        if (!row || it->second.bytes.size() != need || it->second.type != n.desc.dtype) {
          return invalid_argument(who(g, id) + ": bound " +
                                  std::to_string(it->second.bytes.size()) + " bytes of " +
                                  std::string(ggml_type_name(it->second.type)) + ", " +
                                  n.desc.to_string() + " needs " + std::to_string(need));
        }
        v.raw = it->second.bytes.data();
        v.raw_size = need;
      } else {
        auto it = b.states().find(id);
        if (it == b.states().end()) return invalid_argument(who(g, id) + ": state is not bound");
        if (!row || it->second.bytes.size() < need || it->second.type != n.desc.dtype) {
          return invalid_argument(who(g, id) + ": state bound with " +
                                  std::to_string(it->second.bytes.size()) + " bytes, " +
                                  n.desc.to_string() + " needs " + std::to_string(need));
        }
        v.state = it->second.bytes.data();
        v.raw = v.state;
        v.raw_size = need;
      }
      v.type = n.desc.dtype;
      if (v.type == GgmlType::kF32) v.f = reinterpret_cast<const float*>(v.raw);
      continue;
    }
    if (n.desc.dtype == GgmlType::kI32) {
      auto it = b.i32_inputs().find(id);
      if (it == b.i32_inputs().end()) {
        return invalid_argument(who(g, id) + ": I32 input is not bound");
      }
      if (it->second.size() != count) {
        return invalid_argument(who(g, id) + ": bound " + std::to_string(it->second.size()) +
                                " elements, expected " + std::to_string(count));
      }
      v.i = it->second.data();
      v.type = GgmlType::kI32;
      continue;
    }
    auto it = b.f32_inputs().find(id);
    if (it == b.f32_inputs().end()) {
      return invalid_argument(who(g, id) + ": F32 input is not bound");
    }
    if (it->second.size() != count) {
      return invalid_argument(who(g, id) + ": bound " + std::to_string(it->second.size()) +
                              " elements, expected " + std::to_string(count));
    }
    v.f = it->second.data();
  }
  return {};
}

Status CpuBackend::prepare(const graph::Graph& g, const graph::Bindings& bindings) {
  const graph::BindingsAccess b(bindings);
  vals_.assign(g.size(), Val{});
  GENIEX_TRY(bind(g, b));
  return prepare_weights(g);
}

Status CpuBackend::prepare_weights(const graph::Graph& g) {
  // Matmuls first: an embedding table that is also a matmul weight (a tied LM head) then reads
  // the copy its matmul made, from the first run on.
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.role == NodeRole::kOp && n.op == OpKind::kMatMul) prepare_matmul_weights(g, id);
  }
  // The F32 operands of each op family (I32 operands and states are never prepared).
  static constexpr size_t kFirst[] = {0}, kFirstTwo[] = {0, 1}, kFirstThree[] = {0, 1, 2},
                          kRope[] = {0, 2}, kSecond[] = {1};
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.role != NodeRole::kOp) continue;
    Status s;
    switch (n.op) {
      case OpKind::kMatMul: s = prepare_f32_weights(g, id, kSecond); break;
      case OpKind::kEmbedding: prepare_embedding_weights(g, id); break;
      case OpKind::kAttention: s = prepare_attention_weights(g, id); break;
      case OpKind::kRope: s = prepare_f32_weights(g, id, kRope); break;
      case OpKind::kCacheWrite: s = prepare_f32_weights(g, id, kSecond); break;
      case OpKind::kRmsNorm:
      case OpKind::kGlu:
      case OpKind::kMul:
      case OpKind::kAdd: s = prepare_f32_weights(g, id, kFirstTwo); break;
      case OpKind::kSoftmax:
      case OpKind::kGelu:
      case OpKind::kSilu:
      case OpKind::kScale:
      case OpKind::kSoftcap:
      case OpKind::kReshape:
      case OpKind::kHadamard:
      case OpKind::kShortConvState:
      case OpKind::kGetRows: s = prepare_f32_weights(g, id, kFirst); break;
      case OpKind::kShortConv: s = prepare_f32_weights(g, id, kFirstTwo); break;
      case OpKind::kLayerNorm: s = prepare_f32_weights(g, id, kFirstThree); break;
      case OpKind::kGeluErf: s = prepare_f32_weights(g, id, kFirst); break;
    }
    if (!s.ok()) {
      return Status(s.code(),
                    who(g, id) + " (" + std::string(graph::op_name(n.op)) + "): " + s.message());
    }
  }
  return {};
}

void CpuBackend::prepare_matmul_weights(const graph::Graph& g, NodeId id) {
  const NodeId w = g.node(id).inputs[0];
  if (g.node(w).role != NodeRole::kWeight) return;  // a state: read where it is
  const graph::TensorDesc& d = g.node(w).desc;
  Val& v = vals_[w];
  const auto prepared = weights_.prepare_matmul(
      *pool_, d.dtype, std::span<const uint8_t>(v.raw, v.raw_size), d.ne[0], d.ne[1]);
  v.packed = prepared.packed;
  v.bytes = prepared.bytes;
}

void CpuBackend::prepare_embedding_weights(const graph::Graph& g, NodeId id) {
  const NodeId t = g.node(id).inputs[0];
  if (g.node(t).role != NodeRole::kWeight) return;
  Val& v = vals_[t];
  const graph::TensorDesc& d = g.node(t).desc;
  const auto table =
      weights_.find_table(d.dtype, std::span<const uint8_t>(v.raw, v.raw_size), d.ne[0], d.ne[1]);
  v.packed = table.packed;
  v.bytes = table.bytes;
}

Status CpuBackend::prepare_attention_weights(const graph::Graph& g, NodeId id) {
  const auto& in = g.node(id).inputs;
  GENIEX_TRY(prepare_f32_weight(g, in[0]));
  // K and V weights: F16 rows are read in place, any other type as F32 (a Q8_0 / Q4_0 K or V is
  // read in place only as a state or cache write).
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (g.node(in[i]).desc.dtype != GgmlType::kF16) GENIEX_TRY(prepare_f32_weight(g, in[i]));
  }
  return {};
}

Status CpuBackend::prepare_f32_weights(const graph::Graph& g, NodeId id,
                                       std::span<const size_t> inputs) {
  const auto& in = g.node(id).inputs;
  for (size_t i : inputs) {
    if (i < in.size()) GENIEX_TRY(prepare_f32_weight(g, in[i]));
  }
  return {};
}

Status CpuBackend::prepare_f32_weight(const graph::Graph& g, NodeId in) {
  const Node& n = g.node(in);
  Val& v = vals_[in];
  if (n.role != NodeRole::kWeight || v.f != nullptr) return {};
  GENIEX_ASSIGN_OR_RETURN(
      v.f, weights_.dequantized(n.desc.dtype, std::span<const uint8_t>(v.raw, v.raw_size),
                                n.desc.ne[0], n.desc.nrows()));
  return {};
}

Result<const float*> CpuBackend::f32_of(const graph::Graph& g, NodeId id) {
  Val& v = vals_[id];
  if (v.f != nullptr) return v.f;
  const Node& n = g.node(id);
  if (v.raw == nullptr || n.role == NodeRole::kWeight) {
    return internal_error(who(g, id) + " has no F32 value");  // weights: prepare_weights()
  }
  auto& buf = state_f32_[v.raw];
  const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
  if (!row) return invalid_argument(who(g, id) + ": row is not whole blocks");
  buf.resize(sz(n.desc.nelements()));
  for (int64_t r = 0; r < n.desc.nrows(); ++r) {
    GENIEX_TRY(quant::dequantize_row(
        n.desc.dtype, std::span<const uint8_t>(v.raw + sz(r) * *row, *row),
        std::span<float>(buf).subspan(sz(r * n.desc.ne[0]), sz(n.desc.ne[0]))));
  }
  v.f = buf.data();
  return v.f;
}

Status CpuBackend::run_op(const graph::Graph& g, NodeId id, float* out) {
  namespace ref = graph::ref;
  namespace cpu = backends::cpu;
  const Node& n = g.node(id);
  const auto& in = n.inputs;
  const auto& p = n.params;
  auto desc = [&](size_t i) -> const graph::TensorDesc& { return g.node(in[i]).desc; };
  const int64_t count = n.desc.nelements();
  auto cspan = [](const float* f, int64_t c) { return std::span<const float>(f, sz(c)); };
  auto ispan = [&](size_t i) {
    return std::span<const int32_t>(vals_[in[i]].i, sz(desc(i).nelements()));
  };
  auto ospan = [&] { return std::span<float>(out, sz(count)); };
  // Element-wise work split into chunks over the pool.
  auto elementwise = [&](const auto& fn) {
    constexpr int64_t kChunk = 16384;
    FirstError errs;
    pool_->parallel_for((count + kChunk - 1) / kChunk, [&](int64_t c, int) {
      const int64_t b0 = c * kChunk;
      errs.set(fn(b0, std::min(kChunk, count - b0)));
    });
    return errs.take();
  };
  switch (n.op) {
    case OpKind::kEmbedding: {
      // The table as prepare_embedding_weights() left it: a tied LM head's packed copy (its
      // original pages were released), else its huge-page copy or the table itself.
      const Val& tv = vals_[in[0]];
      if (tv.packed != nullptr) {
        GENIEX_ASSIGN_OR_RETURN(const bool done,
                                cpu::embedding_packed(*pool_, *tv.packed, ispan(1), out));
        if (done) return {};
      }
      const uint8_t* table = tv.bytes != nullptr ? tv.bytes : tv.raw;
      return cpu::embedding(*pool_, desc(0).dtype, std::span<const uint8_t>(table, tv.raw_size),
                            desc(0).ne[0], desc(0).ne[1], ispan(1), out);
    }
    case OpKind::kMatMul: {
      // W as prepare_matmul_weights() left it: packed, on huge pages, or in place.
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[1]));
      const Val& wv = vals_[in[0]];
      cpu::MatmulEpilogue ep;
      if (id < fusions_.chain.size() && fusions_.chain[id].last != cpu::MatmulChain::kNone) {
        const cpu::MatmulChain& c = fusions_.chain[id];
        if (c.bias != cpu::MatmulChain::kNone) {
          GENIEX_ASSIGN_OR_RETURN(ep.bias, f32_of(g, c.bias));
        }
        ep.act = c.act;
        if (c.resid != cpu::MatmulChain::kNone) {
          GENIEX_ASSIGN_OR_RETURN(ep.resid, f32_of(g, c.resid));
        }
      }
      const cpu::MatmulEpilogue* epp = ep.empty() ? nullptr : &ep;
      if (wv.packed != nullptr) {
        return cpu::matmul_packed(*pool_, scratch_, *wv.packed, x, desc(1).nrows(), out,
                                  act_source(in[1]), epp);
      }
      const uint8_t* wb = wv.bytes != nullptr ? wv.bytes : wv.raw;
      return cpu::matmul(*pool_, scratch_, desc(0).dtype, std::span<const uint8_t>(wb, wv.raw_size),
                         desc(0).ne[0], desc(0).ne[1], x, desc(1).nrows(), out, act_source(in[1]),
                         epp);
    }
    case OpKind::kRmsNorm: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      const float* w = nullptr;
      if (in.size() == 2) {
        GENIEX_ASSIGN_OR_RETURN(w, f32_of(g, in[1]));
      }
      const int64_t row = desc(0).ne[0];
      if (row <= 0) return invalid_argument("rms_norm: rows of no elements");
      if (w != nullptr && desc(1).nelements() != row) {
        return invalid_argument("rms_norm: weight has " + std::to_string(desc(1).nelements()) +
                                " elements, rows have " + std::to_string(row));
      }
      cpu::rms_norm_rows(*pool_, x, w, row, desc(0).nrows(), p.eps, out);
      return {};
    }
    case OpKind::kRope: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      std::span<const float> ff;
      if (in.size() == 3) {
        GENIEX_ASSIGN_OR_RETURN(const float* f, f32_of(g, in[2]));
        ff = cspan(f, desc(2).nelements());
      }
      return cpu::rope(*pool_, scratch_, x, desc(0).ne[0], desc(0).ne[1], desc(0).ne[2], ispan(1),
                       p.rope, ff, out, act_source(in[1]),
                       in.size() == 3 ? act_source(in[2]) : cpu::ActSource{});
    }
    case OpKind::kAttention: {
      GENIEX_ASSIGN_OR_RETURN(const float* q, f32_of(g, in[0]));
      auto kv = [&](size_t i) -> Result<cpu::KvView> {
        const Val& v = vals_[in[i]];
        const GgmlType t = desc(i).dtype;
        // F16 rows are read in place; so are Q8_0 / Q4_0 caches (states, CacheWrite results),
        // while a weight of those types is an F32 input like any other.
        const bool block = (t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0) &&
                           g.node(in[i]).role != NodeRole::kWeight;
        if (t == GgmlType::kF16 || block) return cpu::KvView{t, v.raw};
        GENIEX_ASSIGN_OR_RETURN(const float* f, f32_of(g, in[i]));
        return cpu::KvView{GgmlType::kF32, reinterpret_cast<const uint8_t*>(f)};
      };
      GENIEX_ASSIGN_OR_RETURN(cpu::KvView k, kv(1));
      GENIEX_ASSIGN_OR_RETURN(cpu::KvView v, kv(2));
      cpu::KvPaging paging;
      paging.n_rows = desc(1).ne[2];
      if (in.size() >= 6) paging.k_rows = ispan(5);
      if (in.size() >= 7) paging.q_seg = ispan(6);
      return cpu::attention(*pool_, scratch_, q, k, v, desc(0).ne[0], desc(2).ne[0], desc(0).ne[1],
                            desc(1).ne[1], desc(0).ne[2], desc(4).ne[0], ispan(3), ispan(4), p.attn,
                            out, paging);
    }
    case OpKind::kSoftmax: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      return ref::softmax(cspan(x, count), desc(0).ne[0], p.scale, ospan());
    }
    case OpKind::kGelu: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      return elementwise([&](int64_t b0, int64_t c) {
        cpu::gelu_rows(x + b0, nullptr, out + b0, c);
        return Status{};
      });
    }
    case OpKind::kSilu: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      return elementwise([&](int64_t b0, int64_t c) {
        cpu::silu_rows(x + b0, nullptr, out + b0, c);
        return Status{};
      });
    }
    case OpKind::kScale:
    case OpKind::kSoftcap: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      return elementwise([&](int64_t b0, int64_t c) {
        return ref::unary(n.op, cspan(x + b0, c), p.scale, std::span<float>(out + b0, sz(c)));
      });
    }
    case OpKind::kGlu: {
      GENIEX_ASSIGN_OR_RETURN(const float* gate, f32_of(g, in[0]));
      GENIEX_ASSIGN_OR_RETURN(const float* up, f32_of(g, in[1]));
      if (p.glu == graph::GluActivation::kGeluTanh) {
        return elementwise([&](int64_t b0, int64_t c) {
          cpu::gelu_rows(gate + b0, up + b0, out + b0, c);
          return Status{};
        });
      }
      if (p.glu == graph::GluActivation::kSilu) {
        return elementwise([&](int64_t b0, int64_t c) {
          cpu::silu_rows(gate + b0, up + b0, out + b0, c);
          return Status{};
        });
      }
      return elementwise([&](int64_t b0, int64_t c) {
        return ref::glu(p.glu, cspan(gate + b0, c), cspan(up + b0, c),
                        std::span<float>(out + b0, sz(c)));
      });
    }
    case OpKind::kMul:
    case OpKind::kAdd: {
      GENIEX_ASSIGN_OR_RETURN(const float* a, f32_of(g, in[0]));
      GENIEX_ASSIGN_OR_RETURN(const float* bb, f32_of(g, in[1]));
      if (desc(0).ne == desc(1).ne) {
        const bool add = n.op == OpKind::kAdd;
        return elementwise([&](int64_t b0, int64_t c) {
          if (add) {  // two plain loops: they vectorize
            for (int64_t i = b0; i < b0 + c; ++i) out[i] = a[i] + bb[i];
          } else {
            for (int64_t i = b0; i < b0 + c; ++i) out[i] = a[i] * bb[i];
          }
          return Status{};
        });
      }
      const auto& ane = desc(0).ne;
      const auto& bne = desc(1).ne;
      if (bne[0] == ane[0] && bne[1] == 1 && bne[2] == 1 && bne[3] == 1) {
        // b [ne0] over every row of a (a bias): the reference's one add or multiply per element,
        // by blocks of rows on the pool.
        const bool add = n.op == OpKind::kAdd;
        const int64_t ne0 = ane[0];
        const int64_t rows = ne0 > 0 ? count / ne0 : 0;
        const int64_t block = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, ne0));
        pool_->parallel_for((rows + block - 1) / block, [&](int64_t c, int) {
          const int64_t r1 = std::min(rows, (c + 1) * block);
          for (int64_t r = c * block; r < r1; ++r) {
            const float* x = a + r * ne0;
            float* y = out + r * ne0;
            if (add) {
              for (int64_t i = 0; i < ne0; ++i) y[i] = x[i] + bb[i];
            } else {
              for (int64_t i = 0; i < ne0; ++i) y[i] = x[i] * bb[i];
            }
          }
        });
        return {};
      }
      return ref::binary(n.op, cspan(a, desc(0).nelements()), desc(0).ne,
                         cspan(bb, desc(1).nelements()), desc(1).ne, ospan());
    }
    case OpKind::kReshape: return {};  // an alias: nothing to compute
    case OpKind::kHadamard: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      cpu::hadamard(*pool_, x, p.hadamard_n, count, out);
      return {};
    }
    case OpKind::kShortConv:
    case OpKind::kShortConvState: {
      const bool conv = n.op == OpKind::kShortConv;
      cpu::ShortConvArgs a;
      GENIEX_ASSIGN_OR_RETURN(a.u, f32_of(g, in[0]));
      a.n_embd = desc(0).ne[0];
      a.n_tokens = desc(0).ne[1];
      const size_t si = conv ? 2 : 1;
      if (conv) {
        GENIEX_ASSIGN_OR_RETURN(a.w, f32_of(g, in[1]));
        a.n_taps = desc(1).ne[0];
      } else {
        a.n_taps = desc(1).ne[1] + 1;
      }
      if (in.size() > si) {
        GENIEX_ASSIGN_OR_RETURN(a.state, f32_of(g, in[si]));
        a.n_slots = desc(si).ne[2];
        a.seq = ispan(si + 1).data();
      }
      return cpu::short_conv(a, conv ? out : nullptr, conv ? nullptr : out);
    }
    case OpKind::kLayerNorm: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      const float* w = nullptr;
      const float* bias = nullptr;
      if (in.size() >= 2) {
        GENIEX_ASSIGN_OR_RETURN(w, f32_of(g, in[1]));
      }
      if (in.size() == 3) {
        GENIEX_ASSIGN_OR_RETURN(bias, f32_of(g, in[2]));
      }
      const int64_t row = desc(0).ne[0];
      if (row <= 0) return invalid_argument("layer_norm: rows of no elements");
      for (size_t i = 1; i < in.size(); ++i) {
        if (desc(i).nelements() != row) {
          return invalid_argument("layer_norm: weight / bias has " +
                                  std::to_string(desc(i).nelements()) + " elements, rows have " +
                                  std::to_string(row));
        }
      }
      cpu::layer_norm_rows(*pool_, x, w, bias, row, desc(0).nrows(), p.eps, out);
      return {};
    }
    case OpKind::kGeluErf: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      return elementwise([&](int64_t b0, int64_t c) {
        cpu::gelu_erf_rows(x + b0, out + b0, c);
        return Status{};
      });
    }
    case OpKind::kGetRows: {
      GENIEX_ASSIGN_OR_RETURN(const float* x, f32_of(g, in[0]));
      const auto idx = ispan(1);
      const int64_t e = desc(0).ne[0];
      for (size_t r = 0; r < idx.size(); ++r) {
        if (idx[r] < 0 || idx[r] >= desc(0).ne[1]) {
          return out_of_range("row " + std::to_string(idx[r]) + " outside [0, " +
                              std::to_string(desc(0).ne[1]) + ")");
        }
        std::memcpy(out + sz(r) * sz(e), x + idx[r] * e, sz(e) * sizeof(float));
      }
      return {};
    }
    case OpKind::kCacheWrite: {
      Val& st = vals_[in[0]];
      GENIEX_ASSIGN_OR_RETURN(const float* src, f32_of(g, in[1]));
      const auto slots = ispan(2);
      const auto& sd = desc(0);
      const int64_t row = sd.ne[0] * sd.ne[1];
      for (size_t t = 0; t < slots.size(); ++t) {  // all checked before anything is written
        if (slots[t] < 0 || slots[t] >= sd.ne[2]) {
          return out_of_range("slot " + std::to_string(slots[t]) + " outside [0, " +
                              std::to_string(sd.ne[2]) + ")");
        }
      }
      // Q8_0 rows through the SIMD quantizer (byte-identical to quant::quantize_row), Q4_0
      // through the reference; ne[0] is whole blocks (checked by the graph), so blocks never
      // straddle heads.
      const size_t row_bytes = *ggml_row_bytes(sd.dtype, static_cast<uint64_t>(row));
      const auto q8 =
          sd.dtype == GgmlType::kQ8_0 ? ::geniex::cpu::dot_kernels(GgmlType::kQ8_0) : std::nullopt;
      for (size_t t = 0; t < slots.size(); ++t) {
        const float* s = src + sz(t) * sz(row);
        uint8_t* d = st.state + sz(slots[t]) * row_bytes;
        if (sd.dtype == GgmlType::kF16) {
          cpu::f32_to_f16_row(s, reinterpret_cast<uint16_t*>(d), row);
        } else if (sd.dtype == GgmlType::kF32) {
          std::memcpy(d, s, sz(row) * sizeof(float));
        } else if (q8 && q8->act_type == GgmlType::kQ8_0) {
          q8->quantize_act(s, d, row);
        } else {
          GENIEX_TRY(quant::quantize_row(sd.dtype, std::span<const float>(s, sz(row)),
                                         std::span<uint8_t>(d, row_bytes)));
        }
      }
      Val& v = vals_[id];
      v.raw = st.raw;
      v.raw_size = st.raw_size;
      v.type = st.type;
      v.f = st.type == GgmlType::kF32 ? reinterpret_cast<const float*>(st.raw) : nullptr;
      return {};
    }
  }
  return internal_error("cpu: unknown op kind");
}

Status CpuBackend::run(const graph::Graph& g, const graph::Bindings& bindings) {
  const graph::BindingsAccess b(bindings);
  const size_t n = g.size();
  const bool hooks = b.has_hooks();
  hooks_ = hooks;
  ++run_gen_;
  vals_.assign(n, Val{});
  for (auto& [id, dst] : b.outputs()) {
    if (id >= n) return invalid_argument("output binding names missing node " + std::to_string(id));
    if (g.node(id).desc.dtype != GgmlType::kF32) {
      return invalid_argument(who(g, id) + ": only F32 nodes can be outputs");
    }
    if (dst.size() != sz(g.node(id).desc.nelements())) {
      return invalid_argument(who(g, id) + ": output buffer has " + std::to_string(dst.size()) +
                              " elements, expected " + std::to_string(g.node(id).desc.nelements()));
    }
  }
  GENIEX_TRY(bind(g, b));
  GENIEX_TRY(prepare_weights(g));  // made by an earlier prepare or run: only looked up
  // Plans depend only on the graph and which nodes are outputs: reuse the last one for the same
  // graph (decode steps rerun one cached graph).
  std::vector<NodeId> out_ids;
  for (auto& [id, dst] : b.outputs()) out_ids.push_back(id);
  std::sort(out_ids.begin(), out_ids.end());
  if (plan_key_ != g.structure_key() || plan_outputs_ != out_ids || plan_hooks_ != hooks) {
    std::vector<bool> keep(n, false);
    for (NodeId id : out_ids) keep[id] = true;
    fusions_ = hooks ? cpu::MatmulFusions{} : cpu::find_matmul_fusions(g, keep);
    plan_ = cpu::plan_graph(g, keep, fusions_.into);
    plan_key_ = g.structure_key();
    plan_outputs_ = out_ids;
    plan_hooks_ = hooks;
  }
  const cpu::ExecPlan& plan = plan_;
  if (arena_.size() < sz(plan.arena_floats)) arena_.resize(sz(plan.arena_floats));
  // An op that is an output writes straight into the caller's buffer (checked above: F32, the
  // node's size) instead of its arena slot and a copy at the end: the logits of a batched Gemma
  // step are 8 MiB.
  out_direct_.assign(n, nullptr);
  for (auto& [id, dst] : b.outputs()) out_direct_[id] = dst.data();
  for (NodeId id = 0; id < n; ++id) {
    const Node& node = g.node(id);
    if (node.role != NodeRole::kOp) continue;
    float* out =
        plan.offset[id] == cpu::ExecPlan::kNoBuffer ? nullptr : arena_.data() + plan.offset[id];
    // (A reshape aliases its input and a cache write has no buffer: neither writes to out.)
    if (out != nullptr && out_direct_[id] != nullptr) out = out_direct_[id];
    if (node.op == OpKind::kReshape) {
      GENIEX_ASSIGN_OR_RETURN(vals_[id].f, f32_of(g, node.inputs[0]));
      continue;
    }
    if (id < fusions_.into.size() && fusions_.into[id] != id) {
      vals_[id].f = vals_[fusions_.into[id]].f;  // computed by that matmul's epilogue
      continue;
    }
    if (hooks) GENIEX_TRY(b.run_hook(id));
    Status s = run_op(g, id, out);
    if (!s.ok()) {
      return Status(s.code(),
                    who(g, id) + " (" + std::string(graph::op_name(node.op)) + "): " + s.message());
    }
    if (node.op != OpKind::kCacheWrite) vals_[id].f = out;
  }
  for (auto& [id, dst] : b.outputs()) {
    GENIEX_ASSIGN_OR_RETURN(const float* src, f32_of(g, id));
    if (src != dst.data()) std::memcpy(dst.data(), src, dst.size() * sizeof(float));
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<Backend>> make_cpu_backend(const CpuBackendOptions& options) {
  const int threads = options.n_threads > 0 ? options.n_threads : ThreadPool::default_threads();
  GENIEX_ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::create(threads));
  if (options.batch_invariant) ::geniex::cpu::enable_batch_invariant();
  if (options.isa) ::geniex::cpu::set_isa_cap(options.isa);
  if (options.gemv_prefetch_bytes >= 0) {
    ::geniex::cpu::set_gemv_prefetch_bytes(static_cast<size_t>(options.gemv_prefetch_bytes));
  }
  if (options.gemv_streams > 0) ::geniex::cpu::set_gemv_streams(options.gemv_streams);
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(std::move(pool), options));
}

}  // namespace geniex::backends
