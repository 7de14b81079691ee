// The reference NPU plugin's C boundary: the exported entry point and the version-1 function
// table. Every call translates Status to a geniex_npu_status + message exactly once, and no
// exception leaves the plugin.
#include <cstdio>
#include <memory>
#include <new>
#include <utility>

#include "backends/npu/plugin_call.h"
#include "backends/npu/ref_plugin/ref_device.h"
#include "quant/quant.h"

namespace geniex::npu_ref {
namespace {

geniex_npu_status to_code(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return GENIEX_NPU_OK;
    case StatusCode::kUnimplemented: return GENIEX_NPU_UNSUPPORTED;
    case StatusCode::kResourceExhausted: return GENIEX_NPU_OUT_OF_MEMORY;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound: return GENIEX_NPU_INVALID_ARGUMENT;
    case StatusCode::kOutOfRange: return GENIEX_NPU_OUT_OF_RANGE;
    default: return GENIEX_NPU_INTERNAL;
  }
}

template <typename Fn>
geniex_npu_status guarded(char* msg, size_t size, Fn&& fn) {
  return npu_plugin::guarded(msg, size, "the reference NPU plugin", to_code, std::forward<Fn>(fn));
}

Device* dev_of(geniex_npu_device* d) { return reinterpret_cast<Device*>(d); }
Compiled* compiled_of(geniex_npu_compiled* c) { return reinterpret_cast<Compiled*>(c); }

void fill_caps(Device& d) {
  uint64_t weights = 0;
  for (uint32_t t = 0; t < 64; ++t) {
    if (ggml_type_traits(t) && quant::can_dequantize(static_cast<GgmlType>(t))) {
      weights |= uint64_t{1} << t;
    }
  }
  const uint64_t f32 = uint64_t{1} << static_cast<uint32_t>(GgmlType::kF32);
  const uint64_t kv = f32 | uint64_t{1} << static_cast<uint32_t>(GgmlType::kF16);
  d.op_caps = {
      {GENIEX_NPU_OP_MATMUL, weights}, {GENIEX_NPU_OP_RMS_NORM, f32},
      {GENIEX_NPU_OP_ROPE, f32},       {GENIEX_NPU_OP_ATTENTION, kv},
      {GENIEX_NPU_OP_CACHE_WRITE, kv}, {GENIEX_NPU_OP_ADD, f32},
      {GENIEX_NPU_OP_MUL, f32},        {GENIEX_NPU_OP_GLU, f32},
      {GENIEX_NPU_OP_SILU, f32},       {GENIEX_NPU_OP_GELU, f32},
      {GENIEX_NPU_OP_SCALE, f32},      {GENIEX_NPU_OP_RESHAPE, f32},
      {GENIEX_NPU_OP_GET_ROWS, f32},   {GENIEX_NPU_OP_SOFTMAX, f32},
  };
  d.caps.struct_size = sizeof(geniex_npu_caps);
  d.caps.device_name = "reference NPU (host, int8)";
  d.caps.memory_bytes = d.config.memory_bytes;
  d.caps.n_ops = static_cast<uint32_t>(d.op_caps.size());
  d.caps.ops = d.op_caps.data();
  d.caps.n_batch_tokens = static_cast<uint32_t>(std::size(kBatchTokens));
  d.caps.batch_tokens = kBatchTokens;
  d.caps.weight_dtype_mask = weights;
}

geniex_npu_status create(const char* config, geniex_npu_device** out, char* msg, size_t size) {
  return guarded(msg, size, [&]() -> Status {
    if (out == nullptr) return invalid_argument("create: out is NULL");
    GENIEX_ASSIGN_OR_RETURN(DeviceConfig cfg, parse_config(config));
    auto d = std::make_unique<Device>();
    d->config = cfg;
    fill_caps(*d);
    *out = reinterpret_cast<geniex_npu_device*>(d.release());
    return {};
  });
}

geniex_npu_status query_caps(geniex_npu_device* dev, geniex_npu_caps* caps, char* msg,
                             size_t size) {
  return guarded(msg, size, [&]() -> Status {
    if (dev == nullptr || caps == nullptr) return invalid_argument("query_caps: NULL argument");
    *caps = dev_of(dev)->caps;
    return {};
  });
}

geniex_npu_status compile(geniex_npu_device* dev, const geniex_npu_graph* graph,
                          geniex_npu_compiled** out, char* msg, size_t size) {
  return guarded(msg, size, [&]() -> Status {
    if (dev == nullptr || graph == nullptr || out == nullptr) {
      return invalid_argument("compile: NULL argument");
    }
    Device& d = *dev_of(dev);
    auto compiled = compile_graph(d, *graph);
    if (!compiled.ok()) {
      d.sweep_weights();  // weights prepared for a graph that failed
      return compiled.status();
    }
    Compiled c = std::move(*compiled);
    auto owned = std::make_unique<Compiled>(std::move(c));
    d.used_bytes += owned->bytes;
    *out = reinterpret_cast<geniex_npu_compiled*>(owned.release());
    return {};
  });
}

geniex_npu_status execute(geniex_npu_device* dev, geniex_npu_compiled* graph,
                          const geniex_npu_buffer* buffers, uint32_t n_buffers, char* msg,
                          size_t size) {
  return guarded(msg, size, [&]() -> Status {
    if (dev == nullptr || graph == nullptr) return invalid_argument("execute: NULL argument");
    Device& d = *dev_of(dev);
    ++d.executes;
    if (d.config.fail_execute_at > 0 && d.executes == d.config.fail_execute_at) {
      return resource_exhausted("execute #" + std::to_string(d.executes) +
                                " fails (fail_execute_at knob)");
    }
    return execute_graph(*compiled_of(graph), buffers, n_buffers);
  });
}

void release(geniex_npu_device* dev, geniex_npu_compiled* graph) {
  if (graph == nullptr) return;
  std::unique_ptr<Compiled> owned(compiled_of(graph));
  if (dev != nullptr) {
    Device& d = *dev_of(dev);
    d.used_bytes -= std::min(d.used_bytes, owned->bytes);
    owned.reset();
    d.sweep_weights();
  }
}

void destroy(geniex_npu_device* dev) { std::unique_ptr<Device> owned(dev_of(dev)); }

constexpr geniex_npu_plugin_v1 kTable = {
    GENIEX_NPU_ABI_VERSION,
    sizeof(geniex_npu_plugin_v1),
    "ref",
    "1.0.0",
    create,
    query_caps,
    compile,
    execute,
    release,
    destroy,
    nullptr,  // alloc_buffer: host memory is device memory here
    nullptr,  // free_buffer
};

}  // namespace
}  // namespace geniex::npu_ref

extern "C" __attribute__((visibility("default"))) const geniex_npu_plugin_v1* geniex_npu_plugin_get(
    uint32_t host_abi_version) {
  return host_abi_version == GENIEX_NPU_ABI_VERSION ? &geniex::npu_ref::kTable : nullptr;
}
