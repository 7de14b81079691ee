// The QNN HTP plugin's graph builder (internal): turns one geniex_npu_graph into QNN tensors and
// nodes in a fresh context. qnn_graph.cpp holds the tensor plumbing and the driver,
// qnn_ops.cpp the per-op lowering of dense ops, qnn_attention.cpp RoPE, CacheWrite and
// Attention (with their host-side work, qnn_host.h).
//
// Shapes: a GenieX tensor ne[0..3] (ne[0] contiguous) is the QNN tensor [ne3, ne2, ne1, ne0]
// (the last dimension varies fastest), so GenieX's broadcast of size-1 dimensions is QNN's
// numpy-style broadcast. An op's result keeps the dims its last QNN node produced; a consumer
// that wants other dims of the same elements gets a Reshape (operand()).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/npu/qnn/qnn_plugin.h"

namespace geniex::npu_qnn {

/// A tensor as created in the QNN graph.
struct Made {
  api::Tensor t;
  std::vector<uint32_t> dims;  // storage of t.v1.dimensions
  std::string name;            // storage of t.v1.name
};

using Dims = std::vector<uint32_t>;

/// What a build makes of every MatMul (qnn_calibrate.cpp decides it per graph).
struct QuantPlan {
  Precision precision = Precision::kFp16;  ///< kW8A16 / kW8: int8 FullyConnected weights
  /// w8a16 with ranges missing: build the fp16 graph instead, with probes on every
  /// FullyConnected's input and output.
  bool probe = false;
  std::map<std::string, Range> ranges;  ///< w8a16: by range key, every one the graph needs
  /// w8a16 / w4a16: FullyConnected (by input range key) left with fp16 activations, their ranges
  /// being outlier-dominated (qnn_calibrate.h).
  std::set<std::string> float_activations;
  std::string salt;  ///< part of the cache key: precision and ranges
};

class Builder {
 public:
  /// `dry`: make the Compiled's host-side structure only (tensors, host work) without QNN calls,
  /// for a graph restored from the context-binary cache.
  Builder(Device& dev, const geniex_npu_graph& desc, Compiled& c, std::string graph_name,
          const QuantPlan& plan, bool dry = false)
      : dev_(dev),
        fn_(dev.htp->fn()),
        desc_(desc),
        c_(c),
        graph_name_(std::move(graph_name)),
        plan_(plan),
        dry_(dry) {}
  Status build();

 private:
  // ---- plumbing (qnn_graph.cpp) ----
  Status collect_outputs();
  static Dims qnn_dims(const geniex_npu_tensor& t);
  static uint64_t elements(const Dims& d);
  std::unique_ptr<IoTensor> io_of(uint32_t id, const Made& m);
  Result<const geniex_npu_tensor*> find(uint32_t id) const;
  // Creates a QNN tensor; `data` (static tensors) must outlive finalize.
  Result<Made*> create(const std::string& name, Dims dims, uint32_t type, uint32_t data_type,
                       const void* data = nullptr, uint64_t bytes = 0,
                       const api::QuantizeParams* quant = nullptr);
  Result<std::vector<float>*> weight_values(const geniex_npu_tensor& t);
  // A static F32 tensor / I32 tensor holding `values`.
  Result<Made*> constant(std::vector<float> values, Dims dims);
  Result<Made*> int_constant(std::vector<int32_t> values, Dims dims);
  // A fresh native F32 tensor of the graph.
  Result<Made*> native(Dims dims);
  // A graph input the plugin fills before each execute (HostInput).
  Result<Made*> host_input(const std::string& what, Dims dims,
                           std::function<Status(const Buffers&, float*)> fill);
  // An op input (graph input, constant or earlier result) with `dims` (reshaped if needed).
  Result<Made*> operand(uint32_t id, const Dims& dims);
  // The tensor of op's result: native, or read by the host when it is a wanted output.
  Result<Made*> result(const geniex_npu_op& op, Dims dims);
  Result<Made*> reshape(Made* m, const Dims& dims);
  Status node(const char* type, const std::string& name, const std::vector<Made*>& ins, Made* out,
              std::vector<api::Param> params = {});
  // `type`(a, b) into a new native tensor of `dims` (or into `out`).
  Result<Made*> binary(const char* type, Made* a, Made* b, const Dims& dims, Made* out = nullptr);
  Result<Made*> unary(const char* type, Made* a, Made* out = nullptr);
  Result<Made*> times(Made* a, float c, Made* out = nullptr);
  Result<Made*> plus(Made* a, float c, Made* out = nullptr);
  Result<Made*> transpose(Made* a, const Dims& perm, Made* out = nullptr);
  Result<Made*> matmul(Made* a, Made* b, bool transpose_b, Dims dims);
  api::Param scalar_u32(const char* name, uint32_t v);
  api::Param scalar_i32(const char* name, int32_t v);
  api::Param scalar_f32(const char* name, float v);
  api::Param scalar_bool(const char* name, bool v);
  Result<api::Param> tensor_u32(const char* name, std::vector<uint32_t> values);
  std::string fresh(const std::string& stem);

  // ---- lowering (qnn_ops.cpp / qnn_attention.cpp) ----
  Status add_op(const geniex_npu_op& op);
  Status lower_elementwise(const geniex_npu_op& op, const geniex_npu_tensor& out);
  Status lower_matmul(const geniex_npu_op& op, const geniex_npu_tensor& out);
  // The quantized FullyConnected (qnn_quant_ops.cpp): int8 per-channel weights; w8a16 wraps it
  // in Quantize / Dequantize with the plan's 16-bit encodings.
  Status lower_fc_quant(const geniex_npu_op& op, const geniex_npu_tensor& w, Made* x, uint32_t rows,
                        uint32_t n);
  // A copy of `m` read back after execute, recorded as a calibration probe of `key`.
  Status probe(Made* m, const std::string& key);
  Status lower_rms_norm(const geniex_npu_op& op, const geniex_npu_tensor& out);
  Status lower_gather(const geniex_npu_op& op, const geniex_npu_tensor& out);
  Result<Made*> activation(uint32_t glu, Made* x);  // 0 SiLU, 1 GELU-tanh
  Status lower_rope(const geniex_npu_op& op, const geniex_npu_tensor& out);
  Status lower_cache_write(const geniex_npu_op& op);
  Status lower_attention(const geniex_npu_op& op, const geniex_npu_tensor& out);
  // Attention's keys or values as [Hkv, Tk, d] (a CacheWrite, a state or an activation).
  Result<Made*> key_list(const geniex_npu_op& op, int which, int64_t tk,
                         std::shared_ptr<std::vector<uint8_t>> seen);

  Device& dev_;
  const api::InterfaceTable& fn_;
  const geniex_npu_graph& desc_;
  Compiled& c_;
  std::string graph_name_;
  const QuantPlan& plan_;
  bool dry_ = false;
  std::map<uint32_t, const geniex_npu_tensor*> by_id_;
  std::map<uint32_t, uint32_t> wanted_;  // output tensor id -> index in desc.outputs
  std::map<uint32_t, Made*> made_;       // GenieX tensor id -> its QNN tensor
  std::map<uint32_t, const geniex_npu_op*> cache_writes_;  // CacheWrite result id -> its op
  std::vector<std::unique_ptr<Made>> all_;                 // every QNN tensor made
  std::vector<std::unique_ptr<std::vector<float>>> keep_;  // static data until finalize
  std::vector<std::unique_ptr<std::vector<int32_t>>> keep_i_;
  std::vector<std::unique_ptr<std::vector<uint32_t>>> keep_u_;
  std::vector<std::unique_ptr<WeightQ8>> keep_q_;
  std::map<uint32_t, Made*> int8_weights_;  // weight id -> its int8 static tensor
  std::vector<std::unique_ptr<Dims>> keep_dims_;
  uint64_t counter_ = 0;
};

}  // namespace geniex::npu_qnn
