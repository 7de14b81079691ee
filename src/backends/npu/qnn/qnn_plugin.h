// Internal types of the QNN HTP plugin: its configuration, the open device and a compiled graph
// (one QNN context holding one finalized graph). C++ only inside the plugin; the boundary is
// qnn_plugin.cpp's C table.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/npu/qnn/qnn_host.h"
#include "backends/npu/qnn/qnn_quant.h"
#include "backends/npu/qnn/qnn_runtime.h"
#include "geniex/npu_plugin.h"

namespace geniex::npu_qnn {

/// The token counts the plugin compiles graphs for: decode (1) and fixed prefill chunks (128).
inline constexpr int32_t kBatchTokens[] = {1, 128};

/// Settings from the config string "key=value;..." (every key optional).
struct Config {
  std::string qnn_lib_dir;  ///< qnn_lib_dir=<folder of libQnnHtp.so>
  uint32_t soc_model = 60;  ///< soc_model=<QNN SoC id> (60: Snapdragon X Elite, SC8380XP)
  uint32_t htp_arch = 73;   ///< htp_arch=v73 | 73 (Hexagon architecture: 68..81)
  uint32_t log_level = 1;   ///< qnn_log_level=1..5 (QNN's own log; 1: errors)
  uint64_t memory_bytes = 1ull << 30;  ///< memory=<n>[K|M|G], the budget caps report
  /// refuse_ops=<op>,<op>...: op kinds left out of the caps (by GenieX name, e.g. Attention), so
  /// the scheduler places stages with them elsewhere.
  std::vector<uint32_t> refuse_ops;
  /// fail_finalize=N (a test knob): the device's Nth graph finalize fails, as a real QNN finalize
  /// failure would (that stage falls back at run time). 0: never.
  uint64_t fail_finalize = 0;
  /// cache_dir=<folder> | none: where prepared contexts are kept (qnn_cache.h; default
  /// $GENIEX_QNN_CACHE_DIR, else ~/.cache/geniex/qnn).
  std::string cache_dir;
  /// cache_max=<n>[K|M|G]: past this total the least recently used entries are removed.
  uint64_t cache_max_bytes = 2ull << 30;
  /// trace=1: one stderr line per compiled graph (nodes, build / finalize ms, binary bytes, or
  /// the restore time from the cache); `geniex compile -v` sets it.
  bool trace = false;
  /// precision=fp16 | w8a16 | w8 | w4a16: fp16 everywhere (weights dequantized), or int8
  /// per-channel weights at every FullyConnected with 16-bit (w8a16) or fp16 (w8) activations,
  /// or int4 per-channel weights with 16-bit activations (w4a16).
  Precision precision = Precision::kFp16;
  /// activation_ranges=<file of `geniex imatrix --activation-ranges`>: the FullyConnected input
  /// ranges of w8a16 / w4a16 (read and checked at create); what it lacks comes from a calibration
  /// run.
  std::string activation_ranges;
};

/// Parses `config` (may be null). Unknown keys and bad values are kInvalidArgument.
Result<Config> parse_config(const char* config);

struct Device;
/// Opens a device for `config` (loads the runtime; what the plugin's create does).
Result<std::unique_ptr<Device>> open_device(const char* config);

/// One tensor of a compiled graph that execute binds to a host buffer.
struct IoTensor {
  uint32_t tensor_id = 0;      ///< the GenieX tensor id
  uint64_t bytes = 0;          ///< exact host buffer size (F32 or I32: 4 bytes an element)
  api::Tensor qnn;             ///< as created (id filled by QNN); clientBuf set per execute
  std::vector<uint32_t> dims;  ///< storage `qnn.v1.dimensions` points into
  std::string name;            ///< storage `qnn.v1.name` points into
};

/// A graph input the plugin fills on the host before each execute (qnn_host.h: RoPE tables,
/// attention masks, K / V rows gathered from a state), in creation order.
struct HostInput {
  std::unique_ptr<IoTensor> io;
  std::vector<float> data;
  std::function<Status(const Buffers&, float*)> fill;
};

/// A graph output only the plugin reads (a CacheWrite's new rows, scattered after execute).
struct HostOutput {
  std::unique_ptr<IoTensor> io;
  std::vector<float> data;
};

/// After execute: CacheWrite's rows into its state (src from a caller input or a HostOutput).
struct HostWrite {
  KeyGather g;
  uint32_t state_id = 0, slots_id = 0;
  uint32_t src_input_id = 0;  ///< the caller's input buffer when src_output < 0
  int src_output = -1;        ///< index into Compiled::host_outputs
  std::string what;
};

/// Before execute: every value of an I32 input (Gather indices) must lie in [0, limit).
struct IndexCheck {
  uint32_t tensor_id = 0;
  int64_t n = 0, limit = 0;
  std::string what;
};

/// A deep copy of a geniex_npu_graph and its weights (the ABI lends them for compile only).
struct GraphCopy {
  geniex_npu_graph g{};
  std::vector<geniex_npu_tensor> tensors;
  std::vector<geniex_npu_op> ops;
  std::vector<uint32_t> outputs;
  std::vector<std::unique_ptr<std::string>> names;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> weights;
};

/// A calibration probe: the host output holding one activation whose range a quantized graph
/// needs, by range key (qnn_calibrate.h).
struct Probe {
  std::string key;
  size_t host_output = 0;  ///< index into Compiled::host_outputs
};

/// A compiled graph: its own context (freed on release) with one finalized graph, plus the host
/// work around it. graph == nullptr when nothing is left for QNN (a lone CacheWrite).
struct Compiled {
  api::Handle context = nullptr;
  api::Handle graph = nullptr;
  std::vector<std::unique_ptr<IoTensor>> inputs;   ///< caller inputs, in creation order
  std::vector<std::unique_ptr<IoTensor>> outputs;  ///< graph outputs, in the host's order
  std::vector<HostInput> host_inputs;
  std::vector<HostOutput> host_outputs;
  std::vector<HostWrite> writes;
  std::vector<IndexCheck> index_checks;
  /// w8a16 graphs whose ranges were not all known: this is the fp16 graph with probes (a copy
  /// of each FullyConnected's input / output read back), run on the first execute; then the
  /// quantized graph of `pending` replaces it (qnn_calibrate.cpp).
  std::vector<Probe> probes;
  std::unique_ptr<GraphCopy> pending;
  uint32_t n_nodes = 0;    ///< QNN nodes added
  double build_ms = 0;     ///< graph construction (tensors, nodes) in QNN
  double finalize_ms = 0;  ///< graphFinalize (HTP preparation)
};

/// What the context-binary cache did on a device (for tests, `geniex compile` and logs).
struct CacheStats {
  uint64_t hits = 0;      ///< compiles served from a cache entry (no finalize)
  uint64_t written = 0;   ///< entries written after a finalize
  uint64_t rejected = 0;  ///< entries present but refused (corrupt, truncated, foreign) and rebuilt
  uint64_t bytes_written = 0;
  uint64_t pruned = 0;    ///< entries removed to stay under cache_max
  std::string last_note;  ///< the last rejection or write failure, "" if none
};

/// An open device.
struct Device {
  Config config;
  const Runtime* runtime = nullptr;
  std::unique_ptr<HtpDevice> htp;
  std::vector<geniex_npu_op_cap> op_caps;
  geniex_npu_caps caps{};
  std::string device_name;          ///< caps.device_name's storage: target, SoC, runtime version
  uint64_t graphs_made = 0;         ///< names graphs uniquely within the process's contexts
  uint64_t finalizes = 0;           ///< graph finalizes attempted (fail_finalize counts them)
  std::filesystem::path cache_dir;  ///< empty: no context-binary cache
  std::string identity;             ///< target + runtime + plugin build, part of every cache key
  CacheStats cache;
  std::shared_ptr<const ActivationRanges> ranges_file;  ///< config activation_ranges, if given
  /// Ranges learned by calibration runs, by range key (qnn_calibrate.h), for later graphs.
  std::map<std::string, Range> calibrated;
  uint64_t calibrations = 0;  ///< calibration runs made (tests, trace)
};

/// Translates `desc` into a QNN graph in a fresh context and finalizes it, or restores it from
/// the context-binary cache (qnn_cache.h). kUnimplemented for an op, type or shape this plugin
/// does not lower, or a graph QNN refuses (with QNN's error).
Result<std::unique_ptr<Compiled>> compile_graph(Device& dev, const geniex_npu_graph& desc);
/// The same with `local`: calibrated ranges of this graph's own probes (qnn_calibrate.cpp).
Result<std::unique_ptr<Compiled>> compile_graph(Device& dev, const geniex_npu_graph& desc,
                                                const std::map<std::string, Range>& local);

/// Runs `c` once with the host buffers (one per graph input and per output).
Status execute_graph(Device& dev, Compiled& c, const geniex_npu_buffer* buffers,
                     uint32_t n_buffers);

/// Frees `c`'s context (and with it the graph).
void release_graph(Device& dev, Compiled& c);

}  // namespace geniex::npu_qnn
