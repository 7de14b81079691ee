// The quantized FullyConnected of the QNN plugin (precision=w8a16 | w8 | w4a16; qnn_quant.h,
// qnn_calibrate.h): the weight [N, K] becomes a static SFIXED_POINT_8 tensor with one symmetric
// scale per output channel (axis 0) computed from our dequantized weights (w4a16: values in
// [-7, 7] with the bit-width encoding, bitwidth 4). w8a16 / w4a16: the fp16
// activation is quantized to UFIXED_POINT_16 with its input range, FullyConnected writes
// UFIXED_POINT_16 with its output range, and a Dequantize brings it back to float. w8: float
// activations straight into FullyConnected with the int8 weight.
#include <cstring>
#include <memory>
#include <string>

#include "backends/npu/qnn/qnn_builder.h"
#include "backends/npu/qnn/qnn_calibrate.h"

namespace geniex::npu_qnn {

namespace {

api::QuantizeParams per_tensor(api::ScaleOffset so) {
  api::QuantizeParams q;
  q.encoding_definition = api::kDefinitionDefined;
  q.quantization_encoding = api::kEncodingScaleOffset;
  static_assert(sizeof(so) <= sizeof(q.encoding));
  std::memcpy(q.encoding, &so, sizeof so);
  return q;
}

}  // namespace

Status Builder::lower_fc_quant(const geniex_npu_op& op, const geniex_npu_tensor& w, Made* x,
                               uint32_t rows, uint32_t n) {
  const auto k = static_cast<uint32_t>(w.ne[0]);
  if (static_cast<uint32_t>(w.ne[1]) != n) {
    return invalid_argument("qnn-htp: MatMul weight '" + std::string(w.name) +
                            "' does not match its output");
  }
  // The weight: int8 per output channel (QNN's FullyConnected weight is [N, K]: axis 0), made
  // once per weight (a tied embedding's table is also a Gather's float constant: another name).
  Made* mw = nullptr;
  if (auto it = int8_weights_.find(w.id); it != int8_weights_.end()) {
    mw = it->second;
  } else {
    auto q = std::make_unique<WeightQ8>();
    if (!dry_) {
      GENIEX_ASSIGN_OR_RETURN(std::vector<float> * values, weight_values(w));
      *q = quantize_per_channel(values->data(), n, k,
                                plan_.precision == Precision::kW4A16 ? 7 : 127);
      keep_.pop_back();  // the f32 copy is not needed past quantization
    } else {
      q->so.resize(n);
    }
    api::QuantizeParams wq;
    wq.encoding_definition = api::kDefinitionDefined;
    wq.quantization_encoding = api::kEncodingAxisScaleOffset;
    const api::AxisScaleOffset axis{0, n, q->so.data()};
    std::memcpy(wq.encoding, &axis, sizeof axis);
    if (plan_.precision == Precision::kW4A16) {  // int4 values, one a byte (SFIXED_POINT_4 as
                                                 // a tensor type: "datatype 772 not supported")
      q->scales.resize(n);
      for (uint32_t i = 0; i < n; ++i) q->scales[i] = q->so[i].scale;
      wq.quantization_encoding = api::kEncodingBwAxisScaleOffset;
      const api::BwAxisScaleOffset bw{4, 0, n, q->scales.data(), nullptr};
      std::memcpy(wq.encoding, &bw, sizeof bw);
    }
    GENIEX_ASSIGN_OR_RETURN(mw, create("wq_t" + std::to_string(w.id), {n, k}, api::kStatic,
                                       api::kSfixed8, q->q.data(), q->q.size(), &wq));
    keep_q_.push_back(std::move(q));
    int8_weights_[w.id] = mw;
  }
  if (plan_.precision == Precision::kW8 || plan_.float_activations.count(range_key(w, false))) {
    GENIEX_ASSIGN_OR_RETURN(Made * mo, result(op, {rows, n}));
    return node(api::kOpFullyConnected, fresh("fc_w8"), {x, mw}, mo);
  }
  const auto in = plan_.ranges.find(range_key(w, false));
  const auto out = plan_.ranges.find(range_key(w, true));
  if (in == plan_.ranges.end() || out == plan_.ranges.end()) {
    return internal_error("qnn-htp: no activation range for '" + range_key(w, false) + "'");
  }
  const api::QuantizeParams iq = per_tensor(u16_encoding(in->second));
  const api::QuantizeParams oq = per_tensor(u16_encoding(out->second));
  GENIEX_ASSIGN_OR_RETURN(Made * xq, create(fresh("fc_in_u16"), {rows, k}, api::kNative,
                                            api::kUfixed16, nullptr, 0, &iq));
  GENIEX_TRY(node(api::kOpQuantize, fresh("quantize"), {x}, xq));
  GENIEX_ASSIGN_OR_RETURN(Made * yq, create(fresh("fc_out_u16"), {rows, n}, api::kNative,
                                            api::kUfixed16, nullptr, 0, &oq));
  GENIEX_TRY(node(api::kOpFullyConnected, fresh("fc_w8a16"), {xq, mw}, yq));
  GENIEX_ASSIGN_OR_RETURN(Made * mo, result(op, {rows, n}));
  return node(api::kOpDequantize, fresh("dequantize"), {yq}, mo);
}

Status Builder::probe(Made* m, const std::string& key) {
  GENIEX_ASSIGN_OR_RETURN(Made * o, create(fresh("probe"), m->dims, api::kAppRead, api::kFloat32));
  GENIEX_TRY(node(api::kOpReshape, fresh("probe_copy"), {m}, o));
  HostOutput h;
  h.io = io_of(0, *o);
  h.data.resize(elements(m->dims));
  c_.host_outputs.push_back(std::move(h));
  c_.probes.push_back({key, c_.host_outputs.size() - 1});
  return {};
}

}  // namespace geniex::npu_qnn
