// The QNN HTP plugin's C boundary: configuration, the exported entry point and the version-1
// function table over Qualcomm's runtime (qnn_runtime.h) and the graph translation
// (qnn_graph.cpp). Every call translates Status to a geniex_npu_status + message exactly once,
// and no exception leaves the plugin.
#include "backends/npu/qnn/qnn_plugin.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <string_view>
#include <utility>

#include "backends/npu/plugin_call.h"
#include "backends/npu/qnn/qnn_cache.h"
#include "core/dtype.h"
#include "quant/quant.h"

namespace geniex::npu_qnn {
namespace {

Result<uint64_t> parse_uint(std::string_view key, std::string_view text, uint64_t mult_allowed) {
  uint64_t mult = 1;
  if (mult_allowed != 0 && !text.empty()) {
    const char last = text.back();
    if (last == 'K' || last == 'k') mult = uint64_t{1} << 10;
    if (last == 'M' || last == 'm') mult = uint64_t{1} << 20;
    if (last == 'G' || last == 'g') mult = uint64_t{1} << 30;
    if (mult != 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 12) {
    return invalid_argument("qnn plugin config: bad value for '" + std::string(key) + "'");
  }
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return invalid_argument("qnn plugin config: bad value '" + std::string(text) + "' for '" +
                              std::string(key) + "'");
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v * mult;
}

geniex_npu_status to_code(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return GENIEX_NPU_OK;
    case StatusCode::kUnimplemented:
    case StatusCode::kNotFound: return GENIEX_NPU_UNSUPPORTED;
    case StatusCode::kResourceExhausted: return GENIEX_NPU_OUT_OF_MEMORY;
    case StatusCode::kInvalidArgument: return GENIEX_NPU_INVALID_ARGUMENT;
    case StatusCode::kOutOfRange: return GENIEX_NPU_OUT_OF_RANGE;
    default: return GENIEX_NPU_INTERNAL;
  }
}

template <typename Fn>
geniex_npu_status guarded(char* msg, size_t size, Fn&& fn) {
  return npu_plugin::guarded(msg, size, "the QNN HTP plugin", to_code, std::forward<Fn>(fn));
}

// GenieX op names (graph/op.h) of the ABI's kinds, for refuse_ops.
constexpr std::string_view kOpNames[GENIEX_NPU_OP_COUNT] = {
    "Embedding", "MatMul", "RmsNorm", "Rope",    "Attention", "Softmax", "Gelu",    "Silu",
    "Mul",       "Add",    "Scale",   "Softcap", "Glu",       "Reshape", "GetRows", "CacheWrite"};

Result<std::vector<uint32_t>> parse_ops(std::string_view list) {
  std::vector<uint32_t> kinds;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (name.empty()) continue;
    const auto* it = std::find(std::begin(kOpNames), std::end(kOpNames), name);
    if (it == std::end(kOpNames)) {
      return invalid_argument("qnn plugin config: refuse_ops names an unknown op '" +
                              std::string(name) + "' (ops: Embedding, MatMul, ... CacheWrite)");
    }
    kinds.push_back(static_cast<uint32_t>(it - std::begin(kOpNames)));
  }
  return kinds;
}

Device* dev_of(geniex_npu_device* d) { return reinterpret_cast<Device*>(d); }
Compiled* compiled_of(geniex_npu_compiled* c) { return reinterpret_cast<Compiled*>(c); }

constexpr uint64_t bit(GgmlType t) { return uint64_t{1} << static_cast<uint32_t>(t); }

void fill_caps(Device& d) {
  const uint64_t f32 = bit(GgmlType::kF32);
  // Every op kind of the ABI is lowered, computed in fp16; KV states are F32 or F16 (quantized
  // caches are not lowered).
  const uint64_t kv = f32 | bit(GgmlType::kF16);
  // Weights of any type the quant module dequantizes, widened at compile time (HTP holds them in
  // fp16: the int8 / int4 HTP path is not done).
  uint64_t weights = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    if (ggml_type_traits(id).has_value() && quant::can_dequantize(static_cast<GgmlType>(id))) {
      weights |= uint64_t{1} << id;
    }
  }
  // clang-format off
  d.op_caps = {
      {GENIEX_NPU_OP_EMBEDDING, weights},  // table: any dequantizable type
      {GENIEX_NPU_OP_MATMUL, weights},
      {GENIEX_NPU_OP_RMS_NORM, f32},
      {GENIEX_NPU_OP_ROPE, f32},
      {GENIEX_NPU_OP_ATTENTION, kv},       // k / v F32 / F16
      {GENIEX_NPU_OP_SOFTMAX, f32},
      {GENIEX_NPU_OP_GELU, f32},
      {GENIEX_NPU_OP_SILU, f32},
      {GENIEX_NPU_OP_MUL, f32},
      {GENIEX_NPU_OP_ADD, f32},
      {GENIEX_NPU_OP_SCALE, f32},
      {GENIEX_NPU_OP_SOFTCAP, f32},
      {GENIEX_NPU_OP_GLU, f32},
      {GENIEX_NPU_OP_RESHAPE, f32},
      {GENIEX_NPU_OP_GET_ROWS, f32},
      {GENIEX_NPU_OP_CACHE_WRITE, kv},     // state F32 / F16
  };
  // clang-format on
  std::erase_if(d.op_caps, [&](const geniex_npu_op_cap& c) {
    return std::find(d.config.refuse_ops.begin(), d.config.refuse_ops.end(), c.kind) !=
           d.config.refuse_ops.end();
  });
  const auto& v = d.runtime->provider->api_version;
  std::string precision = "fp16";
  if (d.config.precision == Precision::kW8A16) {
    precision = "w8a16 (int8 per-channel weights, 16-bit activations at FullyConnected)";
  } else if (d.config.precision == Precision::kW8) {
    precision = "w8 (int8 per-channel weights, fp16 activations)";
  } else if (d.config.precision == Precision::kW4A16) {
    precision = "w4a16 (int4 per-channel weights, 16-bit activations at FullyConnected)";
  }
  d.device_name = "Hexagon v" + std::to_string(d.config.htp_arch) + " HTP, SoC " +
                  std::to_string(d.config.soc_model) + ", " + precision + "; QNN core API " +
                  version_text(v.core) + ", HTP API " + version_text(v.backend);
#if defined(__x86_64__)
  d.device_name += "; x86-64 emulation";
#endif
  d.caps.struct_size = sizeof(geniex_npu_caps);
  d.caps.device_name = d.device_name.c_str();
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
    GENIEX_ASSIGN_OR_RETURN(auto d, open_device(config));
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
    GENIEX_ASSIGN_OR_RETURN(auto c, compile_graph(*dev_of(dev), *graph));
    *out = reinterpret_cast<geniex_npu_compiled*>(c.release());
    return {};
  });
}

geniex_npu_status execute(geniex_npu_device* dev, geniex_npu_compiled* graph,
                          const geniex_npu_buffer* buffers, uint32_t n_buffers, char* msg,
                          size_t size) {
  return guarded(msg, size, [&]() -> Status {
    if (dev == nullptr || graph == nullptr) return invalid_argument("execute: NULL argument");
    return execute_graph(*dev_of(dev), *compiled_of(graph), buffers, n_buffers);
  });
}

void release(geniex_npu_device* dev, geniex_npu_compiled* graph) {
  if (graph == nullptr) return;
  std::unique_ptr<Compiled> owned(compiled_of(graph));
  if (dev != nullptr) release_graph(*dev_of(dev), *owned);
}

void destroy(geniex_npu_device* dev) { std::unique_ptr<Device> owned(dev_of(dev)); }

constexpr geniex_npu_plugin_v1 kTable = {
    GENIEX_NPU_ABI_VERSION,
    sizeof(geniex_npu_plugin_v1),
    "qnn-htp",
    "0.1.0",
    create,
    query_caps,
    compile,
    execute,
    release,
    destroy,
    nullptr,  // alloc_buffer: rpcmem / QnnMem_register shared buffers are not done yet
    nullptr,  // free_buffer
};

}  // namespace

Result<std::unique_ptr<Device>> open_device(const char* config) {
  GENIEX_ASSIGN_OR_RETURN(Config cfg, parse_config(config));
  std::shared_ptr<const ActivationRanges> ranges;
  if (!cfg.activation_ranges.empty()) {
    if (cfg.precision != Precision::kW8A16 && cfg.precision != Precision::kW4A16) {
      return invalid_argument(
          "qnn plugin config: activation_ranges is for precision=w8a16 or w4a16");
    }
    GENIEX_ASSIGN_OR_RETURN(ranges, load_activation_ranges(cfg.activation_ranges));
  }
  GENIEX_ASSIGN_OR_RETURN(const Runtime* rt, load_runtime(runtime_dir(cfg.qnn_lib_dir)));
  auto d = std::make_unique<Device>();
  d->config = cfg;
  d->runtime = rt;
  d->ranges_file = std::move(ranges);
  GENIEX_ASSIGN_OR_RETURN(d->htp, HtpDevice::open(*rt, cfg.soc_model, cfg.htp_arch, cfg.log_level));
  fill_caps(*d);
  d->cache_dir = cache_dir(cfg.cache_dir);
  if (!d->cache_dir.empty()) {
    const auto& v = rt->provider->api_version;
    d->identity = "soc " + std::to_string(cfg.soc_model) + " v" + std::to_string(cfg.htp_arch) +
                  " core " + version_text(v.core) + " htp " + version_text(v.backend) + " build " +
                  rt->build_id + " plugin " + plugin_identity();
  }
  return d;
}

Result<Config> parse_config(const char* config) {
  Config cfg;
  if (config == nullptr) return cfg;
  std::string_view rest(config);
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return invalid_argument("qnn plugin config: '" + std::string(item) + "' is not key=value");
    }
    const std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    if (key == "qnn_lib_dir") {
      cfg.qnn_lib_dir = std::string(value);
    } else if (key == "soc_model") {
      GENIEX_ASSIGN_OR_RETURN(const uint64_t v, parse_uint(key, value, 0));
      cfg.soc_model = static_cast<uint32_t>(v);
    } else if (key == "htp_arch") {
      if (!value.empty() && (value.front() == 'v' || value.front() == 'V')) value.remove_prefix(1);
      GENIEX_ASSIGN_OR_RETURN(const uint64_t v, parse_uint(key, value, 0));
      if (v < 68 || v > 99) {
        return invalid_argument(
            "qnn plugin config: htp_arch " + std::to_string(v) +
            " is not a Hexagon HTP architecture (v68, v69, v73, v75, v79, ...)");
      }
      cfg.htp_arch = static_cast<uint32_t>(v);
    } else if (key == "qnn_log_level") {
      GENIEX_ASSIGN_OR_RETURN(const uint64_t v, parse_uint(key, value, 0));
      if (v < 1 || v > 5) return invalid_argument("qnn plugin config: qnn_log_level is 1..5");
      cfg.log_level = static_cast<uint32_t>(v);
    } else if (key == "memory") {
      GENIEX_ASSIGN_OR_RETURN(cfg.memory_bytes, parse_uint(key, value, 1));
    } else if (key == "refuse_ops") {
      GENIEX_ASSIGN_OR_RETURN(cfg.refuse_ops, parse_ops(value));
    } else if (key == "cache_dir") {
      cfg.cache_dir = std::string(value);
    } else if (key == "cache_max") {
      GENIEX_ASSIGN_OR_RETURN(cfg.cache_max_bytes, parse_uint(key, value, 1));
    } else if (key == "fail_finalize") {
      GENIEX_ASSIGN_OR_RETURN(cfg.fail_finalize, parse_uint(key, value, 0));
    } else if (key == "trace") {
      if (value != "0" && value != "1")
        return invalid_argument("qnn plugin config: trace is 0 or 1");
      cfg.trace = value == "1";
    } else if (key == "precision") {
      if (value == "fp16") {
        cfg.precision = Precision::kFp16;
      } else if (value == "w8a16") {
        cfg.precision = Precision::kW8A16;
      } else if (value == "w8") {
        cfg.precision = Precision::kW8;
      } else if (value == "w4a16") {
        cfg.precision = Precision::kW4A16;
      } else {
        return invalid_argument("qnn plugin config: precision is fp16, w8a16, w8 or w4a16, not '" +
                                std::string(value) + "'");
      }
    } else if (key == "activation_ranges") {
      cfg.activation_ranges = std::string(value);
    } else {
      return invalid_argument("qnn plugin config: unknown key '" + std::string(key) +
                              "' (known: qnn_lib_dir, soc_model, htp_arch, qnn_log_level, memory, "
                              "refuse_ops, fail_finalize, cache_dir, cache_max, trace, precision, "
                              "activation_ranges)");
    }
  }
  return cfg;
}

}  // namespace geniex::npu_qnn

extern "C" __attribute__((visibility("default"))) const geniex_npu_plugin_v1* geniex_npu_plugin_get(
    uint32_t host_abi_version) {
  return host_abi_version == GENIEX_NPU_ABI_VERSION ? &geniex::npu_qnn::kTable : nullptr;
}
