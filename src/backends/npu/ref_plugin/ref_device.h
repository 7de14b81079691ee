// Internal types of the reference NPU plugin: the device (memory cap, test knobs) and a compiled
// graph (the validated graph, int8 weights, scratch). C++ only inside the plugin; the boundary
// is plugin_entry.cpp's C table.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "geniex/npu_plugin.h"
#include "graph/graph.h"

namespace geniex::npu_ref {

/// The token counts this "NPU" compiles for: decode (1) and fixed prefill chunks (128).
inline constexpr int32_t kBatchTokens[] = {1, 128};

/// Default memory cap: 1 GiB.
inline constexpr uint64_t kDefaultMemoryBytes = uint64_t{1} << 30;

/// Device settings: defaults, then environment, then the config string (which wins).
struct DeviceConfig {
  uint64_t memory_bytes = kDefaultMemoryBytes;  ///< memory=<n>[K|M|G]
  bool fail_compile = false;                    ///< fail_compile=1
  int64_t fail_execute_at = 0;                  ///< fail_execute_at=N
};

/// Parses environment + `config` ("key=value;key=value", may be null).
Result<DeviceConfig> parse_config(const char* config);

/// A weight of a MatMul: int8 per output row with one f32 scale per row.
struct Int8Matrix {
  int64_t k = 0;             ///< elements per row (the reduction length)
  int64_t n = 0;             ///< rows (output channels)
  std::vector<int8_t> q;     ///< n rows of k values in [-127, 127]
  std::vector<float> scale;  ///< per row: w ~= q * scale
};

/// A compiled graph: the C description rebuilt (and so validated) as a graph::Graph, with the
/// prepared weights and the scratch every op result lives in.
struct Compiled {
  graph::Graph g;
  std::unordered_map<uint32_t, graph::NodeId> node_of;  ///< C tensor id -> node
  std::vector<uint32_t> tensor_id;                      ///< node -> C tensor id
  std::vector<graph::NodeId> outputs;                   ///< nodes execute returns
  /// MatMul weights, shared with the device's weight cache (and other compiled graphs).
  std::unordered_map<graph::NodeId, std::shared_ptr<const Int8Matrix>> int8;
  std::vector<std::vector<float>> f32;  ///< per node: op results, F32 copies of other weights
  std::vector<int8_t> act_q;            ///< int8 activation scratch (largest matmul input)
  std::vector<float> act_scale;         ///< per-token activation scales
  std::vector<float> kv_scratch;        ///< gathered K and V rows of the largest attention
  std::vector<int32_t> iota;            ///< 0, 1, 2, ... (row list of the gathered keys)
  uint64_t bytes = 0;  ///< memory charged against the device cap (without shared weights)
};

/// A prepared weight kept by the device for every compiled graph that uses the same host tensor
/// (like an NPU context sharing weights between graphs of several shapes).
struct SharedWeight {
  std::shared_ptr<const Int8Matrix> m;
  uint64_t bytes = 0;  ///< charged once, while any compiled graph holds it
};
/// (host pointer, GGML type, k, n) of a weight.
using WeightKey = std::tuple<const void*, uint32_t, int64_t, int64_t>;

/// An open device.
struct Device {
  DeviceConfig config;
  uint64_t used_bytes = 0;  ///< charged by live compiled graphs
  int64_t executes = 0;     ///< execute calls so far (the failure knob counts them)
  std::vector<geniex_npu_op_cap> op_caps;
  geniex_npu_caps caps{};
  std::map<WeightKey, SharedWeight> weights;  ///< int8 weights shared by compiled graphs

  /// Drops the shared weights no compiled graph holds any more and uncharges them.
  void sweep_weights() {
    for (auto it = weights.begin(); it != weights.end();) {
      if (it->second.m.use_count() == 1) {
        used_bytes -= std::min(used_bytes, it->second.bytes);
        it = weights.erase(it);
      } else {
        ++it;
      }
    }
  }
};

/// Validates `desc` against the NPU's rules and prepares it (int8 weights, scratch), charging its
/// memory to `dev`. kUnimplemented: rule broken; kResourceExhausted: over the memory cap.
Result<Compiled> compile_graph(Device& dev, const geniex_npu_graph& desc);

/// Runs `c` once with the host buffers.
Status execute_graph(Compiled& c, const geniex_npu_buffer* buffers, uint32_t n_buffers);

/// Prepares a MatMul weight: dequantize each row, then symmetric int8 with scale max|w| / 127.
Status quantize_weight(GgmlType type, const uint8_t* data, int64_t k, int64_t n, Int8Matrix& out);

/// y[m, n] = (sum_k qx[m, k] * qw[n, k], int32) * sx[m] * sw[n]; x quantized per row (token)
/// to int8 with scale max|x| / 127 into the scratch `act_q` / `act_scale`.
void int8_matmul(const Int8Matrix& w, const float* x, int64_t m, std::vector<int8_t>& act_q,
                 std::vector<float>& act_scale, float* y);

}  // namespace geniex::npu_ref
