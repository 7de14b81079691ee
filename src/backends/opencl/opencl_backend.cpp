#include "backends/opencl/opencl_backend.h"

#include <algorithm>
#include <cstring>

#include "backends/opencl/kernel_sources.h"
#include "backends/opencl/opencl_backend_impl.h"
#include "backends/opencl/program_cache.h"
#include "quant/quant.h"

namespace geniex::backends {
namespace opencl {
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

// Bytes of a node's value on the device (F32 / I32 inputs and op results: 4 bytes an element).
size_t node_bytes(const Node& n) {
  if (n.role == NodeRole::kWeight || n.role == NodeRole::kState) {
    const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
    return row ? *row * sz(n.desc.nrows()) : 0;
  }
  return sz(n.desc.nelements()) * 4;
}

// The node whose buffer `id` shares: Reshape views its input, CacheWrite aliases its state.
NodeId base_of(const graph::Graph& g, NodeId id) {
  while (g.node(id).role == NodeRole::kOp &&
         (g.node(id).op == OpKind::kReshape || g.node(id).op == OpKind::kCacheWrite)) {
    id = g.node(id).inputs[0];
  }
  return id;
}

// Op results share buffers ("slots") by liveness: a slot is free again once the last reader of
// the node living in it has run (outputs live to the end). slot[i] < 0: not an op result of its
// own (inputs, weights, states, aliases).
struct SlotPlan {
  std::vector<int> slot;
  std::vector<size_t> size;
};

SlotPlan plan_slots(const graph::Graph& g, const std::vector<NodeId>& outputs) {
  const size_t n = g.size();
  std::vector<size_t> last(n, 0);
  for (NodeId i = 0; i < n; ++i) {
    last[i] = i;
    for (NodeId in : g.node(i).inputs) {
      const NodeId b = base_of(g, in);
      last[b] = std::max<size_t>(last[b], i);
    }
  }
  for (NodeId o : outputs) last[base_of(g, o)] = n;
  SlotPlan p;
  p.slot.assign(n, -1);
  std::vector<bool> live(n, false);
  std::vector<int> free_slots;
  for (NodeId i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (node.role != NodeRole::kOp || base_of(g, i) != i) continue;
    const size_t need = node_bytes(node);
    int best = -1;  // index into free_slots: the smallest free slot that fits, else any
    for (size_t f = 0; f < free_slots.size(); ++f) {
      const size_t have = p.size[sz(free_slots[f])];
      if (have >= need && (best < 0 || have < p.size[sz(free_slots[sz(best)])])) {
        best = static_cast<int>(f);
      }
    }
    if (best < 0 && !free_slots.empty()) best = 0;
    int s;
    if (best >= 0) {
      s = free_slots[sz(best)];
      free_slots.erase(free_slots.begin() + best);
      p.size[sz(s)] = std::max(p.size[sz(s)], need);
    } else {
      s = static_cast<int>(p.size.size());
      p.size.push_back(need);
    }
    p.slot[i] = s;
    live[i] = true;
    for (NodeId in : node.inputs) {  // released after the output slot was chosen
      const NodeId b = base_of(g, in);
      if (live[b] && last[b] == i) {
        free_slots.push_back(p.slot[b]);
        live[b] = false;
      }
    }
    if (last[i] == i) {
      free_slots.push_back(s);
      live[i] = false;
    }
  }
  return p;
}

constexpr size_t kMaxStagingBytes = size_t{64} << 20;

constexpr const char* kKernelNames[] = {"matmul_q4_0",         "matmul_q5_0",
                                        "matmul_q8_0",         "matmul_q4_k",
                                        "matmul_q5_k",         "matmul_q6_k",
                                        "matmul_iq4_nl",       "matmul_f32",
                                        "matmul_f16",          "matmul_bf16",
                                        "embed_q4_0",          "embed_q5_0",
                                        "embed_q8_0",          "embed_q4_k",
                                        "embed_q5_k",          "embed_q6_k",
                                        "embed_iq4_nl",        "embed_f32",
                                        "embed_f16",           "embed_bf16",
                                        "unary_f32",           "glu_f32",
                                        "binary_f32",          "get_rows_f32",
                                        "cache_write",         "rms_norm_f32",
                                        "softmax_f32",         "rope_f32",
                                        "attention_f32",       "quantize_q8_0_rows",
                                        "quantize_q8_k_rows",  "hadamard_f32",
                                        "layer_norm_f32",      "short_conv_f32",
                                        "short_conv_state_f32"};

}  // namespace

DeviceBuffer::DeviceBuffer(ClPtr<cl_mem> mem, size_t bytes, uint64_t* in_use)
    : mem_(std::move(mem)), bytes_(bytes), in_use_(in_use) {
  *in_use_ += bytes_;
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : mem_(std::move(o.mem_)), bytes_(o.bytes_), in_use_(o.in_use_) {
  o.bytes_ = 0;
  o.in_use_ = nullptr;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    mem_ = std::move(o.mem_);
    bytes_ = o.bytes_;
    in_use_ = o.in_use_;
    o.bytes_ = 0;
    o.in_use_ = nullptr;
  }
  return *this;
}
DeviceBuffer::~DeviceBuffer() { release(); }
void DeviceBuffer::release() {
  if (in_use_ != nullptr) *in_use_ -= bytes_;
  mem_.reset();
  bytes_ = 0;
  in_use_ = nullptr;
}

OpenclBackend::~OpenclBackend() {
  if (queue_) api_->clFinish(queue_.get());
  // Buffers before the context that owns them.
  plans_.clear();
  weights_.clear();
  dummy_ = DeviceBuffer();
  act_q_ = DeviceBuffer();
  rope_buf_ = DeviceBuffer();
}

Result<std::unique_ptr<OpenclBackend>> OpenclBackend::create(const OpenclBackendOptions& options) {
  GENIEX_ASSIGN_OR_RETURN(const ClApi* api, load_cl_api(options.loader_path));
  std::unique_ptr<OpenclBackend> b(new OpenclBackend(api));
  GENIEX_TRY(b->init(options));
  return b;
}

Status OpenclBackend::init(const OpenclBackendOptions& options) {
  options_ = options;
  GENIEX_ASSIGN_OR_RETURN(device_, choose_device(*api_, options.device_filter));
  cl_device_id dev = device_.device;
  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device_.platform), 0};
  ctx_ = cl_own(api_, api_->clCreateContext(props, 1, &dev, nullptr, nullptr, &err));
  if (err != CL_SUCCESS) return cl_status(err, "clCreateContext on " + device_.info.name);
  queue_ =
      cl_own(api_, api_->clCreateCommandQueue(
                       ctx_.get(), dev, options.profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err));
  if (err != CL_SUCCESS) return cl_status(err, "clCreateCommandQueue");
  size_t max_wg = 0;
  api_->clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(max_wg), &max_wg, nullptr);
  wg_ = 64;
  while (wg_ > 1 && wg_ > max_wg) wg_ /= 2;
  cl_ulong max_alloc = 0;
  api_->clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc), &max_alloc, nullptr);
  max_alloc_ = max_alloc;
  limit_ =
      options.memory_limit_bytes != 0 ? options.memory_limit_bytes : device_.info.global_mem_bytes;
  // Kernels are compiled for one work-group size (-DWG). A kernel the driver limits to less
  // (register pressure, e.g. on Adreno) makes us rebuild once with the smaller size.
  // The activation quantizers divide (d = max / 127, 1 / d); OpenCL allows 2.5 ulp for a
  // division unless it is asked for (and offers) correctly rounded ones, as the reference gets.
  cl_device_fp_config fp = 0;
  api_->clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr);
  const std::string exact_div = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0
                                    ? " -cl-fp32-correctly-rounded-divide-sqrt"
                                    : "";
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string build_opts = "-cl-std=CL1.2 -DWG=" + std::to_string(wg_) + exact_div +
                                   (options.use_fp64 ? "" : " -DGENIEX_NO_FP64");
    GENIEX_ASSIGN_OR_RETURN(auto built,
                            build_program(*api_, ctx_.get(), dev, kernel_source(), build_opts,
                                          device_.info.platform + "|" + device_.info.name + "|" +
                                              device_.info.driver_version,
                                          resolve_cache_dir(options.program_cache_dir)));
    kernels_.clear();
    program_ = std::move(built.program);
    stats_.program_from_cache = built.from_cache;
    stats_.program_cache_written = built.cache_written;
    size_t min_wg = wg_;
    for (const char* name : kKernelNames) {
      auto k = cl_own(api_, api_->clCreateKernel(program_.get(), name, &err));
      if (err != CL_SUCCESS) return cl_status(err, std::string("clCreateKernel ") + name);
      size_t kwg = 0;
      api_->clGetKernelWorkGroupInfo(k.get(), dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(kwg), &kwg,
                                     nullptr);
      if (kwg != 0) min_wg = std::min(min_wg, kwg);
      kernels_.emplace(name, std::move(k));
    }
    if (min_wg >= wg_) break;
    if (attempt == 1 || min_wg < 2) {
      return unimplemented("opencl: " + device_.info.name + " allows work-groups of only " +
                           std::to_string(min_wg) + " for the kernels (need " +
                           std::to_string(wg_) + ")");
    }
    while (wg_ > min_wg) wg_ /= 2;
  }
  GENIEX_ASSIGN_OR_RETURN(dummy_, alloc(16, "a placeholder buffer"));
  return {};
}

Result<cl_kernel> OpenclBackend::kernel(const char* name) {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) return internal_error(std::string("opencl: no kernel ") + name);
  return it->second.get();
}

Status OpenclBackend::enqueue(const char* name, cl_kernel k, std::array<size_t, 3> global,
                              std::array<size_t, 3> local) {
  cl_uint dims = global[2] > 1 ? 3 : global[1] > 1 ? 2 : 1;
  const bool has_local = local[0] != 0;
  cl_event ev = nullptr;
  const cl_int err = api_->clEnqueueNDRangeKernel(queue_.get(), k, dims, nullptr, global.data(),
                                                  has_local ? local.data() : nullptr, 0, nullptr,
                                                  options_.profiling ? &ev : nullptr);
  if (err != CL_SUCCESS) return cl_status(err, std::string("enqueueing ") + name);
  if (ev != nullptr) events_.push_back(cl_own(api_, ev));
  ++stats_.kernels;
  return {};
}

Result<DeviceBuffer> OpenclBackend::alloc(size_t bytes, const std::string& what) {
  bytes = std::max<size_t>(bytes, 16);
  // Buffer plans of other graphs are caches: drop the least recently used ones to make room.
  while (in_use_ + bytes > limit_) {
    auto victim = plans_.end();
    for (auto it = plans_.begin(); it != plans_.end(); ++it) {
      if (&*it != plan_) victim = it;
    }
    if (victim == plans_.end()) break;
    plans_.erase(victim);
  }
  if (in_use_ + bytes > limit_) {
    return resource_exhausted("opencl: " + what + " needs " + std::to_string(bytes) +
                              " device bytes, but " + std::to_string(in_use_) + " of the " +
                              std::to_string(limit_) + "-byte memory limit are in use");
  }
  if (max_alloc_ != 0 && bytes > max_alloc_) {
    return resource_exhausted("opencl: " + what + " needs one buffer of " + std::to_string(bytes) +
                              " bytes; " + device_.info.name + " allows at most " +
                              std::to_string(max_alloc_));
  }
  cl_int err = CL_SUCCESS;
  auto mem =
      cl_own(api_, api_->clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
  if (err != CL_SUCCESS)
    return cl_status(err, "allocating " + std::to_string(bytes) + " bytes for " + what);
  return DeviceBuffer(std::move(mem), bytes, &in_use_);
}

Result<GraphPlan*> OpenclBackend::plan_for(const graph::Graph& g,
                                           const std::vector<NodeId>& outputs) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if (it->key == g.structure_key() && it->outputs == outputs) {
      plans_.splice(plans_.begin(), plans_, it);
      return &plans_.front();
    }
  }
  constexpr size_t kMaxPlans = 8;  // e.g. prefill and decode graphs of a few batch shapes
  while (plans_.size() >= kMaxPlans) plans_.pop_back();
  const size_t n = g.size();
  GraphPlan plan;
  plan.key = g.structure_key();
  plan.outputs = outputs;
  plan.mem.assign(n, nullptr);
  for (NodeId i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (node.role != NodeRole::kInput && node.role != NodeRole::kState) continue;
    const char* what = node.role == NodeRole::kState ? " (state)" : " (input)";
    GENIEX_ASSIGN_OR_RETURN(auto buf, alloc(node_bytes(node), who(g, i) + what));
    plan.mem[i] = buf.get();
    plan.owned.push_back(std::move(buf));
  }
  const SlotPlan slots = plan_slots(g, outputs);
  std::vector<cl_mem> slot_mem(slots.size.size());
  for (size_t s = 0; s < slots.size.size(); ++s) {
    GENIEX_ASSIGN_OR_RETURN(auto buf, alloc(slots.size[s], "activation slot " + std::to_string(s)));
    slot_mem[s] = buf.get();
    plan.owned.push_back(std::move(buf));
  }
  for (NodeId i = 0; i < n; ++i) {
    if (slots.slot[i] >= 0) plan.mem[i] = slot_mem[sz(slots.slot[i])];
  }
  plans_.push_front(std::move(plan));
  return &plans_.front();
}

Result<cl_mem> OpenclBackend::weight_buffer(const graph::Graph& g, NodeId id, bool as_f32) {
  const Node& n = g.node(id);
  const std::span<const uint8_t> bytes = host_weight_[id];
  as_f32 = as_f32 && n.desc.dtype != GgmlType::kF32;
  const WeightKey key{bytes.data(), bytes.size(), n.desc.dtype, as_f32};
  if (auto it = weights_.find(key); it != weights_.end()) return it->second.get();
  std::vector<float> converted;
  const void* src = bytes.data();
  size_t size = bytes.size();
  if (as_f32) {  // a norm weight, bias or rope factor stored as F16 / a block type
    const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
    if (!row) return invalid_argument(who(g, id) + ": row is not whole blocks");
    converted.resize(sz(n.desc.nelements()));
    for (int64_t r = 0; r < n.desc.nrows(); ++r) {
      GENIEX_TRY(quant::dequantize_row(
          n.desc.dtype, bytes.subspan(sz(r) * *row, *row),
          std::span<float>(converted).subspan(sz(r * n.desc.ne[0]), sz(n.desc.ne[0]))));
    }
    src = converted.data();
    size = converted.size() * sizeof(float);
  }
  GENIEX_ASSIGN_OR_RETURN(auto buf,
                          alloc(size, who(g, id) + " (weight " + n.desc.to_string() + ")"));
  // Converted data is staged (the vector dies here); raw weights are read in place (immutable,
  // and every run finishes its queue before returning).
  GENIEX_TRY(upload(buf.get(), 0, src, size, as_f32));
  ++stats_.weight_uploads;
  stats_.weight_bytes_uploaded += size;
  cl_mem mem = buf.get();
  weights_.emplace(key, std::move(buf));
  return mem;
}

Status OpenclBackend::upload(cl_mem dst, size_t offset, const void* src, size_t bytes, bool stage) {
  if (bytes == 0) return {};
  if (stage) {
    if (staging_used_ == staging_.size()) staging_.emplace_back();
    auto& buf = staging_[staging_used_++];
    buf.assign(static_cast<const uint8_t*>(src), static_cast<const uint8_t*>(src) + bytes);
    src = buf.data();
  }
  const cl_int err = api_->clEnqueueWriteBuffer(queue_.get(), dst, CL_FALSE, offset, bytes, src, 0,
                                                nullptr, nullptr);
  if (err != CL_SUCCESS) return cl_status(err, "uploading " + std::to_string(bytes) + " bytes");
  stats_.bytes_uploaded += bytes;
  run_up_ += bytes;
  return {};
}

Status OpenclBackend::finish_writebacks() {
  if (!writebacks_pending_) return {};
  writebacks_pending_ = false;
  const cl_int err = api_->clFinish(queue_.get());
  return err == CL_SUCCESS ? Status{} : cl_status(err, "clFinish (KV write-back)");
}

// Inputs are read when their consumer runs (after its hook): I32 ones (positions, slots, rows)
// at every consumer, F32 ones once per run.
Status OpenclBackend::upload_inputs(const graph::Graph& g, NodeId id) {
  for (NodeId in : g.node(id).inputs) {
    const Node& n = g.node(in);
    if (n.role != NodeRole::kInput) continue;
    if (n.desc.dtype == GgmlType::kI32) {
      GENIEX_TRY(upload(plan_->mem[in], 0, host_i32_[in].data(), host_i32_[in].size_bytes(), true));
    } else if (!uploaded_[in]) {
      GENIEX_TRY(upload(plan_->mem[in], 0, host_f32_[in].data(), host_f32_[in].size_bytes(), true));
      uploaded_[in] = true;
    }
  }
  return {};
}

// Host memory is the truth for states: before attention reads a KV state, the rows it addresses
// are copied from the host (runs of consecutive rows in one transfer).
Status OpenclBackend::upload_state_rows(const graph::Graph& g, NodeId kv,
                                        std::span<const int32_t> rows, int64_t n_kv) {
  const NodeId st = base_of(g, kv);
  if (g.node(st).role != NodeRole::kState) return {};
  GENIEX_TRY(finish_writebacks());
  const auto& d = g.node(st).desc;
  const size_t row_bytes = *ggml_row_bytes(d.dtype, static_cast<uint64_t>(d.ne[0] * d.ne[1]));
  const uint8_t* host = host_state_[st].data();
  std::vector<int32_t> r;
  if (rows.empty()) {
    r.resize(sz(n_kv));
    for (int64_t j = 0; j < n_kv; ++j) r[sz(j)] = static_cast<int32_t>(j);
  } else {
    r.assign(rows.begin(), rows.end());
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  for (size_t i = 0; i < r.size();) {
    size_t j = i + 1;
    while (j < r.size() && r[j] == r[j - 1] + 1) ++j;
    const size_t off = sz(r[i]) * row_bytes, len = (j - i) * row_bytes;
    GENIEX_TRY(upload(plan_->mem[st], off, host + off, len, true));
    i = j;
  }
  return {};
}

Status OpenclBackend::bind(const graph::Graph& g, const graph::Bindings& bindings) {
  const graph::BindingsAccess b(bindings);
  const size_t n = g.size();
  host_f32_.assign(n, {});
  host_i32_.assign(n, {});
  host_weight_.assign(n, {});
  host_state_.assign(n, {});
  for (NodeId id = 0; id < n; ++id) {
    const Node& node = g.node(id);
    const size_t count = sz(node.desc.nelements());
    if (node.role == NodeRole::kWeight || node.role == NodeRole::kState) {
      const auto row = ggml_row_bytes(node.desc.dtype, static_cast<uint64_t>(node.desc.ne[0]));
      const size_t need = row ? *row * sz(node.desc.nrows()) : 0;
      if (node.role == NodeRole::kWeight) {
        auto it = b.weights().find(id);
        if (it == b.weights().end()) return invalid_argument(who(g, id) + ": weight is not bound");
        if (!row || it->second.bytes.size() != need || it->second.type != node.desc.dtype) {
          return invalid_argument(who(g, id) + ": bound " +
                                  std::to_string(it->second.bytes.size()) + " bytes of " +
                                  std::string(ggml_type_name(it->second.type)) + ", " +
                                  node.desc.to_string() + " needs " + std::to_string(need));
        }
        host_weight_[id] = it->second.bytes;
      } else {
        auto it = b.states().find(id);
        if (it == b.states().end()) return invalid_argument(who(g, id) + ": state is not bound");
        if (!row || it->second.bytes.size() < need || it->second.type != node.desc.dtype) {
          return invalid_argument(who(g, id) + ": state bound with " +
                                  std::to_string(it->second.bytes.size()) + " bytes of " +
                                  std::string(ggml_type_name(it->second.type)) + ", " +
                                  node.desc.to_string() + " needs " + std::to_string(need));
        }
        host_state_[id] = it->second.bytes.first(need);
      }
      continue;
    }
    if (node.role != NodeRole::kInput) continue;
    const bool i32 = node.desc.dtype == GgmlType::kI32;
    size_t got = 0;
    if (i32) {
      auto it = b.i32_inputs().find(id);
      if (it == b.i32_inputs().end())
        return invalid_argument(who(g, id) + ": I32 input is not bound");
      host_i32_[id] = it->second;
      got = it->second.size();
    } else {
      auto it = b.f32_inputs().find(id);
      if (it == b.f32_inputs().end())
        return invalid_argument(who(g, id) + ": F32 input is not bound");
      host_f32_[id] = it->second;
      got = it->second.size();
    }
    if (got != count) {
      return invalid_argument(who(g, id) + ": bound " + std::to_string(got) +
                              " elements, expected " + std::to_string(count));
    }
  }
  return {};
}

Status OpenclBackend::prepare(const graph::Graph& g, const graph::Bindings& bindings) {
  GENIEX_TRY(bind(g, bindings));
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& node = g.node(id);
    if (node.role != NodeRole::kOp || node.op == OpKind::kRope) continue;  // rope: host table
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const NodeId in = node.inputs[i];
      if (g.node(in).role != NodeRole::kWeight) continue;
      // The forms the kernels read: raw blocks for MatMul / Embedding tables, F32 otherwise.
      const bool raw = ((node.op == OpKind::kMatMul || node.op == OpKind::kEmbedding) && i == 0) ||
                       (node.op == OpKind::kAttention && (i == 1 || i == 2));
      GENIEX_TRY(weight_buffer(g, in, !raw).status());
    }
  }
  const cl_int err = api_->clFinish(queue_.get());
  return err == CL_SUCCESS ? Status{} : cl_status(err, "clFinish (prepare)");
}

Status OpenclBackend::run(const graph::Graph& g, const graph::Bindings& bindings) {
  const graph::BindingsAccess b(bindings);
  const size_t n = g.size();
  std::vector<NodeId> outputs;
  for (const auto& [id, dst] : b.outputs()) {
    if (id >= n) return invalid_argument("output binding names missing node " + std::to_string(id));
    if (g.node(id).desc.dtype != GgmlType::kF32) {
      return invalid_argument(who(g, id) + ": only F32 nodes can be outputs");
    }
    if (dst.size() != sz(g.node(id).desc.nelements())) {
      return invalid_argument(who(g, id) + ": output buffer has " + std::to_string(dst.size()) +
                              " elements, expected " + std::to_string(g.node(id).desc.nelements()));
    }
    outputs.push_back(id);
  }
  std::sort(outputs.begin(), outputs.end());
  for (NodeId id = 0; id < n; ++id) {
    const OpSupport s = supports(g, id);
    if (s.level == Support::kUnsupported) {
      return unimplemented(who(g, id) + " (" + std::string(graph::op_name(g.node(id).op)) +
                           "): not supported by " + name() + ": " + s.reason);
    }
  }
  GENIEX_TRY(bind(g, bindings));
  GENIEX_ASSIGN_OR_RETURN(plan_, plan_for(g, outputs));
  run_up_ = run_down_ = 0;
  staging_used_ = 0;
  events_.clear();
  Status s = run_nodes(g, bindings);
  // Whatever happened, nothing may still be reading or writing host memory when run returns.
  const cl_int err = api_->clFinish(queue_.get());
  writebacks_pending_ = false;
  if (s.ok() && err != CL_SUCCESS) s = cl_status(err, "clFinish");
  double ms = 0.0;
  for (const auto& ev : events_) {
    cl_ulong t0 = 0, t1 = 0;
    if (api_->clGetEventProfilingInfo(ev.get(), CL_PROFILING_COMMAND_START, sizeof(t0), &t0,
                                      nullptr) == CL_SUCCESS &&
        api_->clGetEventProfilingInfo(ev.get(), CL_PROFILING_COMMAND_END, sizeof(t1), &t1,
                                      nullptr) == CL_SUCCESS &&
        t1 >= t0) {
      ms += static_cast<double>(t1 - t0) * 1e-6;
    }
  }
  events_.clear();
  staging_used_ = 0;
  // Staging copies keep their capacity for the next run, unless that would pin a lot of host
  // memory (long KV contexts upload many rows).
  size_t staged = 0;
  for (const auto& v : staging_) staged += v.capacity();
  if (staged > kMaxStagingBytes) staging_.clear();
  plan_ = nullptr;
  stats_.last_device_ms = ms;
  stats_.device_ms += ms;
  stats_.last_bytes_uploaded = run_up_;
  stats_.last_bytes_downloaded = run_down_;
  if (s.ok()) ++stats_.runs;
  return s;
}

Status OpenclBackend::run_nodes(const graph::Graph& g, const graph::Bindings& bindings) {
  const graph::BindingsAccess b(bindings);
  const size_t n = g.size();
  vals_.assign(n, NodeVal{});
  uploaded_.assign(n, false);
  for (NodeId id = 0; id < n; ++id) {
    const Node& node = g.node(id);
    if (node.role == NodeRole::kWeight) {
      continue;  // resolved by the consumers, raw or as F32 (weight_buffer)
    }
    if (node.role != NodeRole::kOp) {
      vals_[id].raw = plan_->mem[id];
      if (node.desc.dtype == GgmlType::kF32) vals_[id].f32 = vals_[id].raw;
      continue;
    }
    if (b.has_hooks()) {
      GENIEX_TRY(finish_writebacks());  // a hook may page the KV rows just written
      GENIEX_TRY(b.run_hook(id));
    }
    GENIEX_TRY(upload_inputs(g, id));
    Status s = run_op(g, id);
    if (!s.ok()) {
      return Status(s.code(),
                    who(g, id) + " (" + std::string(graph::op_name(node.op)) + "): " + s.message());
    }
  }
  for (const auto& [id, dst] : b.outputs()) {
    GENIEX_ASSIGN_OR_RETURN(cl_mem src, f32_of(g, id));
    const cl_int err = api_->clEnqueueReadBuffer(queue_.get(), src, CL_FALSE, 0, dst.size_bytes(),
                                                 dst.data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) return cl_status(err, "reading " + who(g, id));
    stats_.bytes_downloaded += dst.size_bytes();
    run_down_ += dst.size_bytes();
  }
  return {};
}

OpenclStats OpenclBackend::stats() const {
  OpenclStats s = stats_;
  s.device_bytes_in_use = in_use_;
  return s;
}

}  // namespace opencl

Result<std::unique_ptr<Backend>> make_opencl_backend(const OpenclBackendOptions& options) {
  GENIEX_ASSIGN_OR_RETURN(auto b, opencl::OpenclBackend::create(options));
  return std::unique_ptr<Backend>(std::move(b));
}

Result<std::vector<OpenclDeviceInfo>> list_opencl_devices(const std::string& loader_path) {
  GENIEX_ASSIGN_OR_RETURN(const opencl::ClApi* api, opencl::load_cl_api(loader_path));
  GENIEX_ASSIGN_OR_RETURN(auto devices, opencl::enumerate_devices(*api));
  std::vector<OpenclDeviceInfo> out;
  out.reserve(devices.size());
  for (auto& d : devices) out.push_back(std::move(d.info));
  return out;
}

std::optional<OpenclDeviceInfo> opencl_device(const Backend& backend) {
  const auto* b = dynamic_cast<const opencl::OpenclBackend*>(&backend);
  if (b == nullptr) return std::nullopt;
  return b->device_info();
}

std::optional<OpenclStats> opencl_stats(const Backend& backend) {
  const auto* b = dynamic_cast<const opencl::OpenclBackend*>(&backend);
  if (b == nullptr) return std::nullopt;
  return b->stats();
}

}  // namespace geniex::backends
