// Compile and execute of the QNN HTP plugin: a geniex_npu_graph becomes one QNN graph in its own
// context (graphCreate, tensorCreateGraphTensor, graphAddNode, graphFinalize), run with the host
// buffers (graphExecute). Activations are F32 at the boundary and computed in fp16 (the HTP graph
// precision config); F16 / F32 weights become static tensors. Shapes: a GenieX tensor ne[0..3]
// (ne[0] contiguous) is the QNN tensor [ne3, ne2, ne1, ne0] (the last dimension varies fastest),
// so GenieX's broadcast of size-1 dimensions is QNN's numpy-style broadcast.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "backends/npu/qnn/qnn_plugin.h"
#include "core/dtype.h"
#include "core/fp16.h"

namespace geniex::npu_qnn {
namespace {

// A tensor as created in the QNN graph.
struct Made {
  api::Tensor t;
  std::vector<uint32_t> dims;  // storage of t.v1.dimensions
  std::string name;            // storage of t.v1.name
};

class Builder {
 public:
  Builder(Device& dev, const geniex_npu_graph& desc, Compiled& c)
      : dev_(dev), fn_(dev.htp->fn()), desc_(desc), c_(c) {}

  Status build() {
    clear_logged_error();
    if (std::find(std::begin(kBatchTokens), std::end(kBatchTokens), desc_.batch_tokens) ==
        std::end(kBatchTokens)) {
      return unimplemented("qnn-htp compiles graphs of 1 or 128 tokens, not " +
                           std::to_string(desc_.batch_tokens));
    }
    for (uint32_t i = 0; i < desc_.n_tensors; ++i) by_id_[desc_.tensors[i].id] = &desc_.tensors[i];
    for (uint32_t i = 0; i < desc_.n_outputs; ++i) wanted_[desc_.outputs[i]] = i;
    if (const auto e =
            fn_.context_create(dev_.htp->backend(), dev_.htp->device(), nullptr, &c_.context);
        e != api::kSuccess) {
      c_.context = nullptr;
      return qnn_error("QnnContext_create", e);
    }
    api::HtpGraphCustomConfig precision{};
    precision.option = api::kHtpGraphOptionPrecision;
    precision.precision = api::kPrecisionFloat16;
    api::GraphConfig config{0, &precision};
    const api::GraphConfig* configs[] = {&config, nullptr};
    const std::string gname = "geniex_" + std::to_string(++dev_.graphs_made);
    if (const auto e = fn_.graph_create(c_.context, gname.c_str(), configs, &c_.graph);
        e != api::kSuccess) {
      return qnn_error("QnnGraph_create (fp16 precision)", e);
    }
    for (uint32_t i = 0; i < desc_.n_ops; ++i) GENIEX_TRY(add_op(desc_.ops[i]));
    c_.outputs.resize(desc_.n_outputs);
    for (const auto& [id, index] : wanted_) {
      auto it = made_.find(id);
      if (it == made_.end() || by_id_.at(id)->role != GENIEX_NPU_TENSOR_OP) {
        return unimplemented("qnn-htp: output tensor " + std::to_string(id) +
                             " is not computed by an op of the graph");
      }
      c_.outputs[index] = io_of(id, *it->second);
    }
    if (const auto e = fn_.graph_finalize(c_.graph, nullptr, nullptr); e != api::kSuccess) {
      return qnn_error("QnnGraph_finalize", e);
    }
    return {};
  }

 private:
  static std::vector<uint32_t> qnn_dims(const geniex_npu_tensor& t) {
    return {static_cast<uint32_t>(t.ne[3]), static_cast<uint32_t>(t.ne[2]),
            static_cast<uint32_t>(t.ne[1]), static_cast<uint32_t>(t.ne[0])};
  }

  std::unique_ptr<IoTensor> io_of(uint32_t id, const Made& m) {
    auto io = std::make_unique<IoTensor>();
    io->tensor_id = id;
    io->qnn = m.t;
    io->dims = m.dims;
    io->qnn.v1.dimensions = io->dims.data();
    io->name = m.name;
    io->qnn.v1.name = io->name.c_str();
    uint64_t n = 1;
    for (uint32_t d : m.dims) n *= d;
    io->bytes = n * 4;
    return io;
  }

  Result<const geniex_npu_tensor*> find(uint32_t id) const {
    auto it = by_id_.find(id);
    if (it == by_id_.end())
      return invalid_argument("qnn-htp: unknown tensor id " + std::to_string(id));
    return it->second;
  }

  // Creates the QNN tensor for `t` (once), with `dims`; static data from `data` (F32).
  Result<Made*> make(const geniex_npu_tensor& t, std::vector<uint32_t> dims, uint32_t type,
                     std::vector<float>* data = nullptr) {
    if (auto it = made_.find(t.id); it != made_.end()) return it->second.get();
    auto m = std::make_unique<Made>();
    m->dims = std::move(dims);
    m->name = "t" + std::to_string(t.id);
    api::TensorV1& v = m->t.v1;
    v.name = m->name.c_str();
    v.type = type;
    v.data_type = api::kFloat32;
    v.rank = static_cast<uint32_t>(m->dims.size());
    v.dimensions = m->dims.data();
    v.mem_type = api::kMemTypeRaw;
    v.client_buf = {nullptr, 0};
    if (data != nullptr) v.client_buf = {data->data(), static_cast<uint32_t>(data->size() * 4)};
    if (const auto e = fn_.tensor_create_graph_tensor(c_.graph, &m->t); e != api::kSuccess) {
      return qnn_error("QnnTensor_createGraphTensor '" + std::string(t.name) + "'", e);
    }
    Made* out = m.get();
    made_.emplace(t.id, std::move(m));
    return out;
  }

  // A weight's values as F32 (from F32 or F16 bytes), kept until finalize.
  Result<std::vector<float>*> weight_values(const geniex_npu_tensor& t) {
    uint64_t n = 1;
    for (int64_t d : t.ne) n *= static_cast<uint64_t>(d);
    auto v = std::make_unique<std::vector<float>>(n);
    if (t.dtype == static_cast<uint32_t>(GgmlType::kF32) && t.data_bytes == n * 4) {
      std::memcpy(v->data(), t.data, n * 4);
    } else if (t.dtype == static_cast<uint32_t>(GgmlType::kF16) && t.data_bytes == n * 2) {
      const auto* h = static_cast<const uint16_t*>(t.data);
      for (uint64_t i = 0; i < n; ++i) (*v)[i] = fp16_to_fp32(h[i]);
    } else {
      return unimplemented("qnn-htp: weight '" + std::string(t.name) + "' of type " +
                           std::to_string(t.dtype) + " (only F32 and F16 weights)");
    }
    keep_.push_back(std::move(v));
    return keep_.back().get();
  }

  // An op input: an activation (graph input or an earlier op's result) or a constant.
  Result<Made*> operand(uint32_t id, std::vector<uint32_t> dims) {
    GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* t, find(id));
    if (auto it = made_.find(id); it != made_.end()) return it->second.get();
    switch (t->role) {
      case GENIEX_NPU_TENSOR_INPUT: {
        if (t->dtype != static_cast<uint32_t>(GgmlType::kF32)) {
          return unimplemented("qnn-htp: input '" + std::string(t->name) + "' is not F32");
        }
        GENIEX_ASSIGN_OR_RETURN(Made * m, make(*t, std::move(dims), api::kAppWrite));
        c_.inputs.push_back(io_of(id, *m));
        return m;
      }
      case GENIEX_NPU_TENSOR_WEIGHT: {
        GENIEX_ASSIGN_OR_RETURN(auto* values, weight_values(*t));
        return make(*t, std::move(dims), api::kStatic, values);
      }
      case GENIEX_NPU_TENSOR_STATE:
        return unimplemented("qnn-htp: state tensors (KV caches) are not lowered yet");
      default:
        return invalid_argument("qnn-htp: tensor " + std::to_string(id) + " used before its op");
    }
  }

  Result<Made*> result(const geniex_npu_op& op, std::vector<uint32_t> dims) {
    GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* t, find(op.output));
    if (made_.count(op.output) != 0) {
      return invalid_argument("qnn-htp: tensor " + std::to_string(op.output) + " defined twice");
    }
    return make(*t, std::move(dims), wanted_.count(op.output) ? api::kAppRead : api::kNative);
  }

  Status node(const char* type, const std::string& name, const std::vector<Made*>& ins, Made* out,
              std::vector<api::Param> params = {}) {
    std::vector<api::Tensor> in_t;
    in_t.reserve(ins.size());
    for (Made* m : ins) in_t.push_back(m->t);
    api::Tensor out_t = out->t;
    api::OpConfig op;
    op.v1.name = name.c_str();
    op.v1.package_name = api::kOpPackage;
    op.v1.type_name = type;
    op.v1.num_params = static_cast<uint32_t>(params.size());
    op.v1.params = params.empty() ? nullptr : params.data();
    op.v1.num_inputs = static_cast<uint32_t>(in_t.size());
    op.v1.inputs = in_t.data();
    op.v1.num_outputs = 1;
    op.v1.outputs = &out_t;
    if (const auto e = fn_.graph_add_node(c_.graph, op); e != api::kSuccess) {
      return qnn_error(std::string("QnnGraph_addNode ") + type + " '" + name + "'", e);
    }
    return {};
  }

  Status add_op(const geniex_npu_op& op) {
    GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* out, find(op.output));
    const std::string name = "n" + std::to_string(op.output) + "_" + out->name;
    switch (op.kind) {
      case GENIEX_NPU_OP_ADD:
      case GENIEX_NPU_OP_MUL: {
        if (op.n_inputs != 2) return invalid_argument("qnn-htp: Add/Mul takes 2 inputs");
        GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* a, find(op.inputs[0]));
        GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* b, find(op.inputs[1]));
        GENIEX_ASSIGN_OR_RETURN(Made * ma, operand(a->id, qnn_dims(*a)));
        GENIEX_ASSIGN_OR_RETURN(Made * mb, operand(b->id, qnn_dims(*b)));
        GENIEX_ASSIGN_OR_RETURN(Made * mo, result(op, qnn_dims(*out)));
        return node(op.kind == GENIEX_NPU_OP_ADD ? api::kOpAdd : api::kOpMultiply, name, {ma, mb},
                    mo);
      }
      case GENIEX_NPU_OP_MATMUL: {
        if (op.n_inputs != 2) return invalid_argument("qnn-htp: MatMul takes 2 inputs");
        GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* w, find(op.inputs[0]));
        GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* x, find(op.inputs[1]));
        if (w->role != GENIEX_NPU_TENSOR_WEIGHT || w->ne[2] != 1 || w->ne[3] != 1) {
          return unimplemented("qnn-htp: MatMul needs a constant 2-D weight");
        }
        if (x->ne[2] != 1 || x->ne[3] != 1) {
          return unimplemented("qnn-htp: MatMul over 3-D / 4-D activations is not lowered yet");
        }
        // FullyConnected: in [M, K] x weights [N, K] -> [M, N]; GenieX's w [K, N] (K contiguous)
        // is exactly QNN's [N, K].
        GENIEX_ASSIGN_OR_RETURN(Made * mx, operand(x->id, qnn_dims(*x)));
        GENIEX_ASSIGN_OR_RETURN(Made * mw, operand(w->id, {static_cast<uint32_t>(w->ne[1]),
                                                           static_cast<uint32_t>(w->ne[0])}));
        GENIEX_ASSIGN_OR_RETURN(Made * mo, result(op, {static_cast<uint32_t>(out->ne[1]),
                                                       static_cast<uint32_t>(out->ne[0])}));
        return node(api::kOpFullyConnected, name, {mx, mw}, mo);
      }
      case GENIEX_NPU_OP_RMS_NORM: {
        if (op.n_inputs < 1 || op.n_inputs > 2) {
          return invalid_argument("qnn-htp: RmsNorm takes 1 or 2 inputs");
        }
        GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* x, find(op.inputs[0]));
        GENIEX_ASSIGN_OR_RETURN(Made * mx, operand(x->id, qnn_dims(*x)));
        const auto e = static_cast<uint32_t>(x->ne[0]);
        Made* mg = nullptr;
        if (op.n_inputs == 2) {
          GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* w, find(op.inputs[1]));
          if (w->role != GENIEX_NPU_TENSOR_WEIGHT || w->ne[0] != x->ne[0] || w->ne[1] != 1 ||
              w->ne[2] != 1 || w->ne[3] != 1) {
            return unimplemented("qnn-htp: RmsNorm needs a constant [ne0] weight");
          }
          GENIEX_ASSIGN_OR_RETURN(mg, operand(w->id, {e}));
        } else {
          keep_.push_back(std::make_unique<std::vector<float>>(e, 1.0f));
          geniex_npu_tensor ones{};
          ones.id = 0xFFFFFFFFu - op.output;  // a name of its own; never a GenieX id in practice
          ones.name = "ones";
          GENIEX_ASSIGN_OR_RETURN(mg, make(ones, {e}, api::kStatic, keep_.back().get()));
        }
        GENIEX_ASSIGN_OR_RETURN(Made * mo, result(op, qnn_dims(*out)));
        axes_.push_back(std::make_unique<std::pair<uint32_t, uint32_t>>(3u, 1u));
        std::vector<api::Param> params(2);
        params[0].param_type = api::kParamScalar;
        params[0].name = api::kParamEpsilon;
        params[0].scalar_param.data_type = api::kFloat32;
        params[0].scalar_param.float_value = op.params.eps;
        params[1].param_type = api::kParamTensor;
        params[1].name = api::kParamAxes;
        api::TensorV1& t = params[1].tensor_param.v1;
        names_.push_back(std::make_unique<std::string>(name + "_axes"));
        t.name = names_.back()->c_str();
        t.type = api::kStatic;
        t.data_type = api::kUint32;
        t.rank = 1;
        t.dimensions = &axes_.back()->second;  // {1}
        t.mem_type = api::kMemTypeRaw;
        t.client_buf = {&axes_.back()->first, 4};  // {3}: the innermost QNN axis = GenieX ne[0]
        // A tensor parameter is a static tensor of the graph: created like one, then referenced.
        if (const auto err = fn_.tensor_create_graph_tensor(c_.graph, &params[1].tensor_param);
            err != api::kSuccess) {
          return qnn_error("QnnTensor_createGraphTensor '" + *names_.back() + "'", err);
        }
        return node(api::kOpRmsNorm, name, {mx, mg}, mo, std::move(params));
      }
      default:
        return unimplemented("qnn-htp: op kind " + std::to_string(op.kind) +
                             " is not lowered to QNN yet");
    }
  }

  Device& dev_;
  const api::InterfaceTable& fn_;
  const geniex_npu_graph& desc_;
  Compiled& c_;
  std::map<uint32_t, const geniex_npu_tensor*> by_id_;
  std::map<uint32_t, uint32_t> wanted_;  // output tensor id -> index in desc.outputs
  std::map<uint32_t, std::unique_ptr<Made>> made_;
  std::vector<std::unique_ptr<std::vector<float>>> keep_;  // static data until finalize
  std::vector<std::unique_ptr<std::pair<uint32_t, uint32_t>>> axes_;
  std::vector<std::unique_ptr<std::string>> names_;
};

}  // namespace

Result<std::unique_ptr<Compiled>> compile_graph(Device& dev, const geniex_npu_graph& desc) {
  auto c = std::make_unique<Compiled>();
  Builder b(dev, desc, *c);
  if (Status s = b.build(); !s.ok()) {
    release_graph(dev, *c);
    return s;
  }
  return c;
}

Status execute_graph(Device& dev, Compiled& c, const geniex_npu_buffer* buffers,
                     uint32_t n_buffers) {
  std::vector<api::Tensor> ins, outs;
  ins.reserve(c.inputs.size());
  outs.reserve(c.outputs.size());
  auto bind = [&](const std::vector<std::unique_ptr<IoTensor>>& list,
                  std::vector<api::Tensor>& to) -> Status {
    for (const auto& io : list) {
      const geniex_npu_buffer* b = nullptr;
      for (uint32_t i = 0; i < n_buffers; ++i) {
        if (buffers[i].tensor_id == io->tensor_id) b = &buffers[i];
      }
      if (b == nullptr || b->data == nullptr) {
        return invalid_argument("qnn-htp execute: no buffer for tensor " +
                                std::to_string(io->tensor_id));
      }
      if (b->bytes != io->bytes) {
        return invalid_argument("qnn-htp execute: tensor " + std::to_string(io->tensor_id) +
                                " needs " + std::to_string(io->bytes) + " bytes, got " +
                                std::to_string(b->bytes));
      }
      api::Tensor t = io->qnn;
      t.v1.client_buf = {b->data, static_cast<uint32_t>(b->bytes)};
      to.push_back(t);
    }
    return {};
  };
  GENIEX_TRY(bind(c.inputs, ins));
  clear_logged_error();
  GENIEX_TRY(bind(c.outputs, outs));
  if (const auto e = dev.htp->fn().graph_execute(
          c.graph, ins.data(), static_cast<uint32_t>(ins.size()), outs.data(),
          static_cast<uint32_t>(outs.size()), nullptr, nullptr);
      e != api::kSuccess) {
    return qnn_error("QnnGraph_execute", e);
  }
  return {};
}

void release_graph(Device& dev, Compiled& c) {
  if (c.context != nullptr) (void)dev.htp->fn().context_free(c.context, nullptr);
  c.context = nullptr;
  c.graph = nullptr;
}

}  // namespace geniex::npu_qnn
