// Compile and execute of the QNN HTP plugin: a geniex_npu_graph becomes one QNN graph in its own
// context (graphCreate, tensorCreateGraphTensor, graphAddNode, graphFinalize), run with the host
// buffers (graphExecute) between the host work of qnn_host.h. Activations are F32 at the boundary
// and computed in fp16 (the HTP graph precision config); F16 / F32 weights become static tensors.
// This file: the builder's tensor plumbing and driver, compile / execute / release.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/npu/qnn/qnn_builder.h"
#include "backends/npu/qnn/qnn_cache.h"
#include "backends/npu/qnn/qnn_calibrate.h"
#include "core/dtype.h"
#include "core/fp16.h"
#include "quant/quant.h"

namespace geniex::npu_qnn {

Status Builder::build() {
  clear_logged_error();
  if (std::find(std::begin(kBatchTokens), std::end(kBatchTokens), desc_.batch_tokens) ==
      std::end(kBatchTokens)) {
    return unimplemented("qnn-htp compiles graphs of 1 or 128 tokens, not " +
                         std::to_string(desc_.batch_tokens));
  }
  for (uint32_t i = 0; i < desc_.n_tensors; ++i) by_id_[desc_.tensors[i].id] = &desc_.tensors[i];
  for (uint32_t i = 0; i < desc_.n_outputs; ++i) wanted_[desc_.outputs[i]] = i;
  if (dry_) {
    for (uint32_t i = 0; i < desc_.n_ops; ++i) GENIEX_TRY(add_op(desc_.ops[i]));
    return collect_outputs();
  }
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
  if (const auto e = fn_.graph_create(c_.context, graph_name_.c_str(), configs, &c_.graph);
      e != api::kSuccess) {
    return qnn_error("QnnGraph_create (fp16 precision)", e);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < desc_.n_ops; ++i) GENIEX_TRY(add_op(desc_.ops[i]));
  GENIEX_TRY(collect_outputs());
  const auto t1 = std::chrono::steady_clock::now();
  c_.build_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  if (c_.n_nodes == 0) {  // nothing for QNN (a lone CacheWrite of an input): host work only
    (void)fn_.context_free(c_.context, nullptr);
    c_.context = nullptr;
    c_.graph = nullptr;
    return {};
  }
  if (++dev_.finalizes == dev_.config.fail_finalize) {
    return unimplemented("QnnGraph_finalize failed: forced by fail_finalize=" +
                         std::to_string(dev_.config.fail_finalize) + " (test knob)");
  }
  if (const auto e = fn_.graph_finalize(c_.graph, nullptr, nullptr); e != api::kSuccess) {
    return qnn_error("QnnGraph_finalize", e);
  }
  c_.finalize_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  return {};
}

Status Builder::collect_outputs() {
  c_.outputs.resize(desc_.n_outputs);
  for (const auto& [id, index] : wanted_) {
    auto it = made_.find(id);
    if (it == made_.end() || by_id_.at(id)->role != GENIEX_NPU_TENSOR_OP ||
        it->second->t.v1.type != api::kAppRead) {
      return unimplemented("qnn-htp: output tensor " + std::to_string(id) +
                           " is not computed by an op of the graph");
    }
    c_.outputs[index] = io_of(id, *it->second);
  }
  return {};
}

Dims Builder::qnn_dims(const geniex_npu_tensor& t) {
  return {static_cast<uint32_t>(t.ne[3]), static_cast<uint32_t>(t.ne[2]),
          static_cast<uint32_t>(t.ne[1]), static_cast<uint32_t>(t.ne[0])};
}

uint64_t Builder::elements(const Dims& d) {
  uint64_t n = 1;
  for (uint32_t v : d) n *= v;
  return n;
}

std::unique_ptr<IoTensor> Builder::io_of(uint32_t id, const Made& m) {
  auto io = std::make_unique<IoTensor>();
  io->tensor_id = id;
  io->qnn = m.t;
  io->dims = m.dims;
  io->qnn.v1.dimensions = io->dims.data();
  io->name = m.name;
  io->qnn.v1.name = io->name.c_str();
  io->bytes = elements(m.dims) * 4;  // F32 or I32
  return io;
}

Result<const geniex_npu_tensor*> Builder::find(uint32_t id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) {
    return invalid_argument("qnn-htp: unknown tensor id " + std::to_string(id));
  }
  return it->second;
}

std::string Builder::fresh(const std::string& stem) {
  return stem + "_" + std::to_string(++counter_);
}

Result<Made*> Builder::create(const std::string& name, Dims dims, uint32_t type, uint32_t data_type,
                              const void* data, uint64_t bytes, const api::QuantizeParams* quant) {
  auto m = std::make_unique<Made>();
  m->dims = std::move(dims);
  m->name = name;
  api::TensorV1& v = m->t.v1;
  v.name = m->name.c_str();
  v.type = type;
  v.data_type = data_type;
  v.rank = static_cast<uint32_t>(m->dims.size());
  v.dimensions = m->dims.data();
  v.mem_type = api::kMemTypeRaw;
  v.client_buf = {const_cast<void*>(data), static_cast<uint32_t>(bytes)};
  if (quant != nullptr) v.quantize_params = *quant;
  if (dry_) {
    all_.push_back(std::move(m));
    return all_.back().get();
  }
  if (const auto e = fn_.tensor_create_graph_tensor(c_.graph, &m->t); e != api::kSuccess) {
    return qnn_error("QnnTensor_createGraphTensor '" + name + "'", e);
  }
  all_.push_back(std::move(m));
  return all_.back().get();
}

Result<std::vector<float>*> Builder::weight_values(const geniex_npu_tensor& t) {
  uint64_t n = 1;
  for (int64_t d : t.ne) n *= static_cast<uint64_t>(d);
  auto v = std::make_unique<std::vector<float>>(n);
  // Any dequantizable type, row by row, to f32 (HTP holds the static tensor in fp16).
  const auto type = static_cast<GgmlType>(t.dtype);
  const auto row = ggml_row_bytes(type, static_cast<uint64_t>(t.ne[0]));
  const uint64_t rows = n / static_cast<uint64_t>(t.ne[0]);
  if (!quant::can_dequantize(type) || !row || t.data_bytes != *row * rows) {
    return unimplemented("qnn-htp: weight '" + std::string(t.name) + "' of type " +
                         std::to_string(t.dtype) + " (" + std::to_string(t.data_bytes) +
                         " bytes) cannot be dequantized");
  }
  const auto* src = static_cast<const uint8_t*>(t.data);
  const auto e = static_cast<size_t>(t.ne[0]);
  for (uint64_t r = 0; r < rows; ++r) {
    GENIEX_TRY(quant::dequantize_row(type, std::span<const uint8_t>(src + r * *row, *row),
                                     std::span<float>(v->data() + r * e, e)));
  }
  keep_.push_back(std::move(v));
  return keep_.back().get();
}

Result<Made*> Builder::constant(std::vector<float> values, Dims dims) {
  keep_.push_back(std::make_unique<std::vector<float>>(std::move(values)));
  const auto& v = *keep_.back();
  return create(fresh("const"), std::move(dims), api::kStatic, api::kFloat32, v.data(),
                v.size() * 4);
}

Result<Made*> Builder::int_constant(std::vector<int32_t> values, Dims dims) {
  keep_i_.push_back(std::make_unique<std::vector<int32_t>>(std::move(values)));
  const auto& v = *keep_i_.back();
  return create(fresh("iconst"), std::move(dims), api::kStatic, api::kInt32, v.data(),
                v.size() * 4);
}

Result<Made*> Builder::native(Dims dims) {
  return create(fresh("tmp"), std::move(dims), api::kNative, api::kFloat32);
}

Result<Made*> Builder::host_input(const std::string& what, Dims dims,
                                  std::function<Status(const Buffers&, float*)> fill) {
  GENIEX_ASSIGN_OR_RETURN(Made * m,
                          create(fresh(what), std::move(dims), api::kAppWrite, api::kFloat32));
  HostInput h;
  h.io = io_of(0, *m);
  h.data.resize(elements(m->dims));
  h.fill = std::move(fill);
  c_.host_inputs.push_back(std::move(h));
  return m;
}

Result<Made*> Builder::operand(uint32_t id, const Dims& dims) {
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* t, find(id));
  Made* m = nullptr;
  if (auto it = made_.find(id); it != made_.end()) {
    m = it->second;
  } else {
    switch (t->role) {
      case GENIEX_NPU_TENSOR_INPUT: {
        uint32_t type = api::kFloat32;
        if (t->dtype == static_cast<uint32_t>(GgmlType::kI32)) {
          type = api::kInt32;
        } else if (t->dtype != static_cast<uint32_t>(GgmlType::kF32)) {
          return unimplemented("qnn-htp: input '" + std::string(t->name) +
                               "' is neither F32 nor I32");
        }
        GENIEX_ASSIGN_OR_RETURN(
            m, create("t" + std::to_string(id), qnn_dims(*t), api::kAppWrite, type));
        c_.inputs.push_back(io_of(id, *m));
        break;
      }
      case GENIEX_NPU_TENSOR_WEIGHT: {
        GENIEX_ASSIGN_OR_RETURN(auto* values, weight_values(*t));
        GENIEX_ASSIGN_OR_RETURN(m, create("t" + std::to_string(id), qnn_dims(*t), api::kStatic,
                                          api::kFloat32, values->data(), values->size() * 4));
        break;
      }
      case GENIEX_NPU_TENSOR_STATE:
        return unimplemented("qnn-htp: state '" + std::string(t->name) +
                             "' is read only by Attention / CacheWrite here");
      default:
        if (cache_writes_.count(id) != 0) {
          return unimplemented("qnn-htp: a CacheWrite result is read only by Attention here");
        }
        return invalid_argument("qnn-htp: tensor " + std::to_string(id) + " used before its op");
    }
    made_[id] = m;
  }
  if (m->dims == dims) return m;
  return reshape(m, dims);
}

Result<Made*> Builder::result(const geniex_npu_op& op, Dims dims) {
  if (made_.count(op.output) != 0) {
    return invalid_argument("qnn-htp: tensor " + std::to_string(op.output) + " defined twice");
  }
  GENIEX_ASSIGN_OR_RETURN(
      Made * m, create("t" + std::to_string(op.output), std::move(dims),
                       wanted_.count(op.output) ? api::kAppRead : api::kNative, api::kFloat32));
  made_[op.output] = m;
  return m;
}

Result<Made*> Builder::reshape(Made* m, const Dims& dims) {
  if (elements(m->dims) != elements(dims)) {
    return invalid_argument("qnn-htp: reshape of " + m->name + " to another element count");
  }
  GENIEX_ASSIGN_OR_RETURN(Made * out, native(dims));
  GENIEX_TRY(node(api::kOpReshape, fresh("reshape"), {m}, out));
  return out;
}

Status Builder::node(const char* type, const std::string& name, const std::vector<Made*>& ins,
                     Made* out, std::vector<api::Param> params) {
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
  if (dry_) {
    ++c_.n_nodes;
    return {};
  }
  if (const auto e = fn_.graph_add_node(c_.graph, op); e != api::kSuccess) {
    return qnn_error(std::string("QnnGraph_addNode ") + type + " '" + name + "'", e);
  }
  ++c_.n_nodes;
  return {};
}

Result<Made*> Builder::binary(const char* type, Made* a, Made* b, const Dims& dims, Made* out) {
  if (out == nullptr) {
    GENIEX_ASSIGN_OR_RETURN(out, native(dims));
  }
  GENIEX_TRY(node(type, fresh(type), {a, b}, out));
  return out;
}

Result<Made*> Builder::unary(const char* type, Made* a, Made* out) {
  if (out == nullptr) {
    GENIEX_ASSIGN_OR_RETURN(out, native(a->dims));
  }
  GENIEX_TRY(node(type, fresh(type), {a}, out));
  return out;
}

Result<Made*> Builder::times(Made* a, float c, Made* out) {
  GENIEX_ASSIGN_OR_RETURN(Made * k, constant({c}, {1}));
  return binary(api::kOpMultiply, a, k, a->dims, out);
}

Result<Made*> Builder::plus(Made* a, float c, Made* out) {
  GENIEX_ASSIGN_OR_RETURN(Made * k, constant({c}, {1}));
  return binary(api::kOpAdd, a, k, a->dims, out);
}

Result<Made*> Builder::transpose(Made* a, const Dims& perm, Made* out) {
  Dims dims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) dims[i] = a->dims[perm[i]];
  if (out == nullptr) {
    GENIEX_ASSIGN_OR_RETURN(out, native(dims));
  }
  GENIEX_ASSIGN_OR_RETURN(api::Param p, tensor_u32(api::kParamPerm, perm));
  GENIEX_TRY(node(api::kOpTranspose, fresh("transpose"), {a}, out, {p}));
  return out;
}

Result<Made*> Builder::matmul(Made* a, Made* b, bool transpose_b, Dims dims) {
  GENIEX_ASSIGN_OR_RETURN(Made * out, native(std::move(dims)));
  GENIEX_TRY(node(api::kOpMatMul, fresh("matmul"), {a, b}, out,
                  {scalar_bool(api::kParamTransposeIn0, false),
                   scalar_bool(api::kParamTransposeIn1, transpose_b)}));
  return out;
}

namespace {

// A scalar parameter of `type`; the caller sets the union member that type names.
api::Param scalar_param(const char* name, uint32_t type) {
  api::Param p;
  p.param_type = api::kParamScalar;
  p.name = name;
  p.scalar_param.data_type = type;
  return p;
}

}  // namespace

api::Param Builder::scalar_u32(const char* name, uint32_t v) {
  api::Param p = scalar_param(name, api::kUint32);
  p.scalar_param.uint32_value = v;
  return p;
}

api::Param Builder::scalar_i32(const char* name, int32_t v) {
  api::Param p = scalar_param(name, api::kInt32);
  p.scalar_param.int32_value = v;
  return p;
}

api::Param Builder::scalar_f32(const char* name, float v) {
  api::Param p = scalar_param(name, api::kFloat32);
  p.scalar_param.float_value = v;
  return p;
}

api::Param Builder::scalar_bool(const char* name, bool v) {
  api::Param p = scalar_param(name, api::kBool8);
  p.scalar_param.bool8_value = v ? 1 : 0;
  return p;
}

Result<api::Param> Builder::tensor_u32(const char* name, std::vector<uint32_t> values) {
  keep_u_.push_back(std::make_unique<std::vector<uint32_t>>(std::move(values)));
  const auto& v = *keep_u_.back();
  // A tensor parameter is a static tensor of the graph: created like one, then referenced.
  GENIEX_ASSIGN_OR_RETURN(Made * m, create(fresh(name), {static_cast<uint32_t>(v.size())},
                                           api::kStatic, api::kUint32, v.data(), v.size() * 4));
  api::Param p;
  p.param_type = api::kParamTensor;
  p.name = name;
  p.tensor_param = m->t;
  return p;
}

namespace {

// The execute-time tensors whose QNN ids a cache entry keeps, in creation order.
std::vector<IoTensor*> io_list(Compiled& c) {
  std::vector<IoTensor*> l;
  for (auto& io : c.inputs) l.push_back(io.get());
  for (auto& io : c.outputs) l.push_back(io.get());
  for (auto& h : c.host_inputs) l.push_back(h.io.get());
  for (auto& h : c.host_outputs) l.push_back(h.io.get());
  return l;
}

Result<std::unique_ptr<Compiled>> build_fresh(Device& dev, const geniex_npu_graph& desc,
                                              const std::string& name, const QuantPlan& plan) {
  auto c = std::make_unique<Compiled>();
  Builder b(dev, desc, *c, name, plan);
  if (Status s = b.build(); !s.ok()) {
    release_graph(dev, *c);
    return s;
  }
  return c;
}

// A cached context for `desc`: the host-side structure from a dry build, the context from the
// binary, the graph by name, the tensors' QNN ids from the entry. kDataLoss when the entry does
// not fit the graph or QNN refuses it.
Result<std::unique_ptr<Compiled>> restore(Device& dev, const geniex_npu_graph& desc,
                                          const std::string& name, const QuantPlan& plan,
                                          const CacheEntry& e) {
  auto c = std::make_unique<Compiled>();
  Builder b(dev, desc, *c, name, plan, /*dry=*/true);
  GENIEX_TRY(b.build());
  const auto ios = io_list(*c);
  if (c->n_nodes == 0 || ios.size() != e.tensor_ids.size()) {
    return data_loss("it holds " + std::to_string(e.tensor_ids.size()) +
                     " tensor ids, the graph has " + std::to_string(ios.size()));
  }
  const auto& fn = dev.htp->fn();
  clear_logged_error();
  if (const auto err =
          fn.context_create_from_binary(dev.htp->backend(), dev.htp->device(), nullptr,
                                        e.binary.data(), e.binary.size(), &c->context, nullptr);
      err != api::kSuccess) {
    c->context = nullptr;
    return data_loss(qnn_error("QnnContext_createFromBinary", err).message());
  }
  if (const auto err = fn.graph_retrieve(c->context, name.c_str(), &c->graph);
      err != api::kSuccess) {
    const std::string why = qnn_error("QnnGraph_retrieve '" + name + "'", err).message();
    release_graph(dev, *c);
    return data_loss(why);
  }
  for (size_t i = 0; i < ios.size(); ++i) ios[i]->qnn.v1.id = e.tensor_ids[i];
  return c;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Config trace=1: one stderr line per compiled graph (measurement; docs/performance.md).
void trace(const Device& dev, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void trace(const Device& dev, const char* fmt, ...) {
  if (!dev.config.trace) return;
  std::va_list args;
  va_start(args, fmt);
  std::fputs("geniex: qnn-htp ", stderr);
  std::vfprintf(stderr, fmt, args);
  std::fputc('\n', stderr);
  va_end(args);
}

Result<std::unique_ptr<Compiled>> compile_planned(Device& dev, const geniex_npu_graph& desc,
                                                  const std::map<std::string, Range>& local);
Status run_graph(Device& dev, Compiled& c, const geniex_npu_buffer* buffers, uint32_t n_buffers);

void note(Device& dev, const std::string& line) {
  dev.cache.last_note = line;
  std::fprintf(stderr, "geniex: %s\n", line.c_str());
}

// After a finalize: the context binary and the ids into the cache (a failure is only noted).
void save(Device& dev, Compiled& c, uint64_t key, const std::filesystem::path& file) {
  const auto& fn = dev.htp->fn();
  CacheEntry e;
  uint64_t size = 0, written = 0;
  clear_logged_error();
  if (const auto err = fn.context_get_binary_size(c.context, &size); err != api::kSuccess) {
    note(dev, "qnn-htp cache: " + qnn_error("QnnContext_getBinarySize", err).message());
    return;
  }
  e.binary.resize(size);
  if (const auto err = fn.context_get_binary(c.context, e.binary.data(), size, &written);
      err != api::kSuccess || written > size) {
    note(dev, "qnn-htp cache: " + qnn_error("QnnContext_getBinary", err).message());
    return;
  }
  e.binary.resize(written);
  for (IoTensor* io : io_list(c)) e.tensor_ids.push_back(io->qnn.v1.id);
  if (Status s = write_entry(file, key, e); !s.ok()) {
    note(dev, "qnn-htp cache: " + s.message());
    return;
  }
  ++dev.cache.written;
  dev.cache.bytes_written += written;
  dev.cache.pruned +=
      static_cast<uint64_t>(prune_entries(file.parent_path(), dev.config.cache_max_bytes, file));
}

}  // namespace

Result<std::unique_ptr<Compiled>> compile_graph(Device& dev, const geniex_npu_graph& desc) {
  return compile_graph(dev, desc, {});
}

Result<std::unique_ptr<Compiled>> compile_graph(Device& dev, const geniex_npu_graph& desc,
                                                const std::map<std::string, Range>& local) {
  GENIEX_ASSIGN_OR_RETURN(auto c, compile_planned(dev, desc, local));
  if (!c->probes.empty()) c->pending = copy_graph(desc);
  return c;
}

namespace {

Result<std::unique_ptr<Compiled>> compile_planned(Device& dev, const geniex_npu_graph& desc,
                                                  const std::map<std::string, Range>& local) {
  GENIEX_ASSIGN_OR_RETURN(const QuantPlan plan, make_plan(dev, desc, local));
  if (dev.cache_dir.empty()) {
    GENIEX_ASSIGN_OR_RETURN(
        auto c, build_fresh(dev, desc, "geniex_" + std::to_string(++dev.graphs_made), plan));
    trace(dev, "graph of %d tokens, %u nodes: built in %.1f ms, finalized in %.1f ms (no cache)",
          desc.batch_tokens, c->n_nodes, c->build_ms, c->finalize_ms);
    return c;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t key = graph_key(desc, dev.identity + plan.salt);
  const std::string name = "geniex_" + key_text(key);
  const auto file = dev.cache_dir / (key_text(key) + ".qnnctx");
  auto entry = read_entry(file, key);
  if (entry.ok()) {
    auto c = restore(dev, desc, name, plan, *entry);
    if (c.ok()) {
      ++dev.cache.hits;
      touch_entry(file);
      trace(dev, "graph %s of %d tokens, %u nodes: restored from the cache in %.1f ms (%zu bytes)",
            key_text(key).c_str(), desc.batch_tokens, (*c)->n_nodes, ms_since(t0),
            entry->binary.size());
      return c;
    }
    if (c.status().code() != StatusCode::kDataLoss) return c.status();
    ++dev.cache.rejected;
    note(dev, "qnn-htp cache entry " + file.string() + " not used (" + c.status().message() +
                  "); rebuilding it");
  } else if (entry.status().code() != StatusCode::kNotFound) {
    ++dev.cache.rejected;
    note(dev, "qnn-htp cache entry " + file.string() + " not used (" + entry.status().message() +
                  "); rebuilding it");
  }
  GENIEX_ASSIGN_OR_RETURN(auto c, build_fresh(dev, desc, name, plan));
  const uint64_t bytes_before = dev.cache.bytes_written;
  if (c->graph != nullptr) save(dev, *c, key, file);
  trace(dev,
        "graph %s of %d tokens, %u nodes: built in %.1f ms, finalized in %.1f ms, binary %llu "
        "bytes",
        key_text(key).c_str(), desc.batch_tokens, c->n_nodes, c->build_ms, c->finalize_ms,
        static_cast<unsigned long long>(dev.cache.bytes_written - bytes_before));
  return c;
}

}  // namespace

Status execute_graph(Device& dev, Compiled& c, const geniex_npu_buffer* buffers,
                     uint32_t n_buffers) {
  GENIEX_TRY(run_graph(dev, c, buffers, n_buffers));
  if (c.pending != nullptr) return finish_calibration(dev, c);
  return {};
}

namespace {

Status run_graph(Device& dev, Compiled& c, const geniex_npu_buffer* buffers, uint32_t n_buffers) {
  if (n_buffers > 0 && buffers == nullptr) {
    return invalid_argument("qnn-htp execute: NULL buffers");
  }
  const Buffers bufs(buffers, n_buffers);
  for (const IndexCheck& ic : c.index_checks) {
    GENIEX_ASSIGN_OR_RETURN(auto v, bufs.ints(ic.tensor_id, ic.n, ic.what));
    for (int32_t i : v) {
      if (i < 0 || i >= ic.limit) {
        return out_of_range("qnn-htp " + ic.what + ": index " + std::to_string(i) +
                            " outside [0, " + std::to_string(ic.limit) + ")");
      }
    }
  }
  // Host work first: it reads the states before this step's CacheWrites change them.
  for (HostInput& h : c.host_inputs) GENIEX_TRY(h.fill(bufs, h.data.data()));
  std::vector<api::Tensor> ins, outs;
  ins.reserve(c.inputs.size() + c.host_inputs.size());
  outs.reserve(c.outputs.size() + c.host_outputs.size());
  auto bind = [&](const std::vector<std::unique_ptr<IoTensor>>& list,
                  std::vector<api::Tensor>& to) -> Status {
    for (const auto& io : list) {
      GENIEX_ASSIGN_OR_RETURN(const geniex_npu_buffer* b,
                              bufs.get(io->tensor_id, "tensor " + io->name));
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
  GENIEX_TRY(bind(c.outputs, outs));
  for (HostInput& h : c.host_inputs) {
    api::Tensor t = h.io->qnn;
    t.v1.client_buf = {h.data.data(), static_cast<uint32_t>(h.io->bytes)};
    ins.push_back(t);
  }
  for (HostOutput& h : c.host_outputs) {
    api::Tensor t = h.io->qnn;
    t.v1.client_buf = {h.data.data(), static_cast<uint32_t>(h.io->bytes)};
    outs.push_back(t);
  }
  // Every slot is checked before QNN runs or anything is written.
  std::vector<std::span<const int32_t>> slots(c.writes.size());
  std::vector<uint8_t*> states(c.writes.size());
  for (size_t i = 0; i < c.writes.size(); ++i) {
    const HostWrite& w = c.writes[i];
    GENIEX_ASSIGN_OR_RETURN(slots[i], bufs.ints(w.slots_id, w.g.tokens, w.what + " slots"));
    const uint64_t elem = w.g.type == GgmlType::kF32 ? 4 : 2;
    GENIEX_ASSIGN_OR_RETURN(states[i], bufs.state(w.state_id,
                                                  static_cast<uint64_t>(w.g.rows) *
                                                      static_cast<uint64_t>(w.g.row_elems) * elem,
                                                  w.what));
    for (int32_t s : slots[i]) {
      if (s < 0 || s >= w.g.rows) {
        return out_of_range("qnn-htp " + w.what + ": slot " + std::to_string(s) +
                            " outside a state of " + std::to_string(w.g.rows) + " rows");
      }
    }
  }
  if (c.graph != nullptr) {
    clear_logged_error();
    if (const auto e = dev.htp->fn().graph_execute(
            c.graph, ins.data(), static_cast<uint32_t>(ins.size()), outs.data(),
            static_cast<uint32_t>(outs.size()), nullptr, nullptr);
        e != api::kSuccess) {
      return qnn_error("QnnGraph_execute", e);
    }
  }
  for (size_t i = 0; i < c.writes.size(); ++i) {
    const HostWrite& w = c.writes[i];
    const float* src = nullptr;
    if (w.src_output >= 0) {
      src = c.host_outputs[static_cast<size_t>(w.src_output)].data.data();
    } else {
      GENIEX_ASSIGN_OR_RETURN(const geniex_npu_buffer* b, bufs.get(w.src_input_id, w.what));
      if (b->bytes != static_cast<uint64_t>(w.g.tokens * w.g.row_elems) * 4) {
        return invalid_argument("qnn-htp execute: " + w.what + " source has the wrong size");
      }
      src = static_cast<const float*>(b->data);
    }
    GENIEX_TRY(scatter_rows(w.g, slots[i], src, states[i]));
  }
  return {};
}

}  // namespace

void release_graph(Device& dev, Compiled& c) {
  if (c.context != nullptr) (void)dev.htp->fn().context_free(c.context, nullptr);
  c.context = nullptr;
  c.graph = nullptr;
}

}  // namespace geniex::npu_qnn
