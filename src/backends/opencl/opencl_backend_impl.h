// The OpenCL backend's class (internal): device objects, the weight cache, per-graph buffer
// plans and the run loop (opencl_backend.cpp), per-op kernel launches (opencl_ops.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backends/opencl/cl_api.h"
#include "backends/opencl/cl_device.h"
#include "backends/opencl/opencl_backend.h"

namespace geniex::backends::opencl {

/// A device buffer counted against the backend's memory limit while it lives.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(ClPtr<cl_mem> mem, size_t bytes, uint64_t* in_use);
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  [[nodiscard]] cl_mem get() const { return mem_.get(); }
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  void release();
  ClPtr<cl_mem> mem_;
  size_t bytes_ = 0;
  uint64_t* in_use_ = nullptr;
};

/// Device buffers of one graph structure (and set of bound outputs), reused across its runs:
/// inputs and states get their own buffers, op results share liveness-planned slots.
struct GraphPlan {
  uint64_t key = 0;
  std::vector<graph::NodeId> outputs;
  std::vector<DeviceBuffer> owned;
  std::vector<cl_mem> mem;  ///< per node; null for weights and aliases (resolved per run)
};

/// The value of a node during a run.
struct NodeVal {
  cl_mem raw = nullptr;  ///< bytes of the node's dtype (weights, states, inputs, op results)
  cl_mem f32 = nullptr;  ///< an F32 view, when the node has one
};

/// The backend. One thread at a time (Backend's contract).
class OpenclBackend final : public Backend {
 public:
  /// Opens the device chosen by `options` and builds (or loads) the kernels.
  static Result<std::unique_ptr<OpenclBackend>> create(const OpenclBackendOptions& options);
  ~OpenclBackend() override;

  [[nodiscard]] std::string name() const override { return "opencl(" + device_.info.name + ")"; }
  [[nodiscard]] const OpenclDeviceInfo& device_info() const { return device_.info; }
  [[nodiscard]] DeviceKind kind() const override { return DeviceKind::kGpu; }
  [[nodiscard]] OpSupport supports(const graph::Graph& graph, graph::NodeId id) const override;
  Status run(const graph::Graph& graph, const graph::Bindings& bindings) override;
  /// Uploads the graph's weights into the device weight cache (the scheduler calls it for the
  /// next stage while another unit runs the current one).
  Status prepare(const graph::Graph& graph, const graph::Bindings& bindings) override;

  /// Counters since creation.
  [[nodiscard]] OpenclStats stats() const;

 private:
  explicit OpenclBackend(const ClApi* api) : api_(api) {}
  Status init(const OpenclBackendOptions& options);

  // Memory.
  Result<DeviceBuffer> alloc(size_t bytes, const std::string& what);
  Result<GraphPlan*> plan_for(const graph::Graph& g, const std::vector<graph::NodeId>& outputs);
  Result<cl_mem> weight_buffer(const graph::Graph& g, graph::NodeId id, bool as_f32);

  // Transfers (non-blocking; host data is staged so hooks may change it afterwards).
  Status upload(cl_mem dst, size_t offset, const void* src, size_t bytes, bool stage);
  Status upload_inputs(const graph::Graph& g, graph::NodeId id);
  Status upload_state_rows(const graph::Graph& g, graph::NodeId kv, std::span<const int32_t> rows,
                           int64_t n_kv);
  Status finish_writebacks();

  // Execution.
  Status bind(const graph::Graph& g, const graph::Bindings& b);
  Status run_nodes(const graph::Graph& g, const graph::Bindings& b);
  Status run_op(const graph::Graph& g, graph::NodeId id);
  Status op_matmul(const graph::Graph& g, graph::NodeId id);
  Status op_embedding(const graph::Graph& g, graph::NodeId id);
  Status op_attention(const graph::Graph& g, graph::NodeId id);
  Status op_rope(const graph::Graph& g, graph::NodeId id);
  Status op_short_conv(const graph::Graph& g, graph::NodeId id);
  Status op_cache_write(const graph::Graph& g, graph::NodeId id);
  Status cache_write_blocks(const graph::Graph& g, graph::NodeId id, cl_mem src,
                            std::span<const int32_t> slots);
  Result<cl_mem> f32_of(const graph::Graph& g, graph::NodeId id);
  [[nodiscard]] std::span<const int32_t> host_i32(graph::NodeId id) const;

  /// Sets the arguments of kernel `name` and enqueues it over `global` (`local`: all zero lets
  /// the driver choose).
  template <typename... Args>
  Status launch(const char* name, std::array<size_t, 3> global, std::array<size_t, 3> local,
                const Args&... args);
  Status enqueue(const char* name, cl_kernel k, std::array<size_t, 3> global,
                 std::array<size_t, 3> local);
  Result<cl_kernel> kernel(const char* name);

  const ClApi* api_;
  DeviceEntry device_;
  ClPtr<cl_context> ctx_;
  ClPtr<cl_command_queue> queue_;
  ClPtr<cl_program> program_;
  std::unordered_map<std::string, ClPtr<cl_kernel>> kernels_;
  OpenclBackendOptions options_;
  size_t wg_ = 64;
  uint64_t max_alloc_ = 0;
  uint64_t limit_ = 0;
  uint64_t in_use_ = 0;
  DeviceBuffer dummy_;     // bound to unused pointer arguments
  DeviceBuffer act_q_;     // activation rows quantized for block-weight MatMuls (grown on demand)
  DeviceBuffer rope_buf_;  // RoPE cos / sin table (grown on demand)
  std::vector<float> rope_table_;    // its host copy (capacity kept)
  DeviceBuffer conv_buf_;            // short-conv source table (grown on demand)
  std::vector<int32_t> conv_table_;  // its host copy (capacity kept)
  OpenclStats stats_;

  // Weights by (host address, bytes, type, converted to F32): immutable while bound.
  using WeightKey = std::tuple<const uint8_t*, size_t, GgmlType, bool>;
  std::map<WeightKey, DeviceBuffer> weights_;
  std::list<GraphPlan> plans_;  // most recently used first

  // Per run.
  GraphPlan* plan_ = nullptr;
  std::vector<NodeVal> vals_;
  std::vector<std::span<const float>> host_f32_;
  std::vector<std::span<const int32_t>> host_i32_;
  std::vector<std::span<const uint8_t>> host_weight_;
  std::vector<std::span<uint8_t>> host_state_;
  std::vector<bool> uploaded_;
  std::deque<std::vector<uint8_t>> staging_;
  size_t staging_used_ = 0;
  std::vector<ClPtr<cl_event>> events_;
  bool writebacks_pending_ = false;
  uint64_t run_up_ = 0, run_down_ = 0;
};

template <typename... Args>
Status OpenclBackend::launch(const char* name, std::array<size_t, 3> global,
                             std::array<size_t, 3> local, const Args&... args) {
  GENIEX_ASSIGN_OR_RETURN(cl_kernel k, kernel(name));
  cl_uint i = 0;
  cl_int err = CL_SUCCESS;
  ((err = err != CL_SUCCESS ? err : api_->clSetKernelArg(k, i++, sizeof(Args), &args)), ...);
  if (err != CL_SUCCESS) {
    return cl_status(err, std::string("setting argument ") + std::to_string(i - 1) + " of " + name);
  }
  return enqueue(name, k, global, local);
}

}  // namespace geniex::backends::opencl
