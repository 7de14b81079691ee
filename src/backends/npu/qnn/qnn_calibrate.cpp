// Activation ranges and the calibration run of the quantized HTP path (qnn_calibrate.h).
#include "backends/npu/qnn/qnn_calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/fnv1a.h"

namespace geniex::npu_qnn {

std::string range_key(const geniex_npu_tensor& w, bool output) {
  std::string k =
      (w.name != nullptr && w.name[0] != '\0') ? std::string(w.name) : "#" + std::to_string(w.id);
  if (output) k += "#out";
  return k;
}

namespace {

bool named(const std::string& key) { return !key.empty() && key[0] != '#'; }

Range hull(Range a, Range b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max), std::max(a.typical, b.typical)};
}

// True when 16-bit steps over `r` are coarse for the bulk of its values: |values| reach more than
// kOutlierSpread times their 99.9th percentile.
bool outlier_dominated(const Range& r) {
  const float amax = std::max(std::fabs(r.min), std::fabs(r.max));
  return r.typical > 0.0f && amax > kOutlierSpread * r.typical;
}

}  // namespace

Result<QuantPlan> make_plan(const Device& dev, const geniex_npu_graph& desc,
                            const std::map<std::string, Range>& local) {
  QuantPlan plan;
  plan.precision = dev.config.precision;
  if (plan.precision == Precision::kFp16) return plan;
  plan.salt = std::string(" precision ") + precision_name(plan.precision);
  if (plan.precision != Precision::kW8A16 && plan.precision != Precision::kW4A16) return plan;
  std::map<uint32_t, const geniex_npu_tensor*> by_id;
  for (uint32_t i = 0; i < desc.n_tensors; ++i) by_id[desc.tensors[i].id] = &desc.tensors[i];
  for (uint32_t i = 0; i < desc.n_ops; ++i) {
    const geniex_npu_op& op = desc.ops[i];
    if (op.kind != GENIEX_NPU_OP_MATMUL || op.n_inputs != 2) continue;
    const auto it = by_id.find(op.inputs[0]);
    if (it == by_id.end() || it->second->role != GENIEX_NPU_TENSOR_WEIGHT) continue;
    const geniex_npu_tensor& w = *it->second;
    for (const bool output : {false, true}) {
      const std::string key = range_key(w, output);
      std::optional<Range> r;
      if (!output && dev.ranges_file != nullptr && named(key)) {
        if (auto e = dev.ranges_file->tensors.find(key); e != dev.ranges_file->tensors.end()) {
          if (e->second.columns != w.ne[0]) {
            return invalid_argument(
                "qnn plugin: activation_ranges file '" + dev.ranges_file->path + "' gives '" + key +
                "' inputs of " + std::to_string(e->second.columns) +
                " values a token, the model's weight takes " + std::to_string(w.ne[0]) +
                " (a file for another model" +
                (dev.ranges_file->model.empty() ? "" : ": " + dev.ranges_file->model) + "?)");
          }
          r = widened(e->second.range, kCalibrationMargin);
        }
      }
      // A calibrated range (this graph's, else the device's) joins the file's: the file comes
      // from another text, and values past its range would saturate.
      std::optional<Range> cal;
      if (auto l = local.find(key); l != local.end()) {
        cal = l->second;
      } else if (named(key)) {
        if (auto d = dev.calibrated.find(key); d != dev.calibrated.end()) cal = d->second;
      }
      if (cal) r = r ? hull(*r, *cal) : *cal;
      if (r) {
        plan.ranges[key] = *r;
      } else {
        plan.probe = true;
      }
    }
    const auto in = plan.ranges.find(range_key(w, false)),
               out = plan.ranges.find(range_key(w, true));
    if (in != plan.ranges.end() && out != plan.ranges.end() &&
        (outlier_dominated(in->second) || outlier_dominated(out->second))) {
      plan.float_activations.insert(range_key(w, false));
    }
  }
  if (plan.probe) {
    plan.ranges.clear();
    plan.salt += " probe";
    return plan;
  }
  uint64_t h = kFnv1aOffset;
  for (const auto& [key, r] : plan.ranges) {
    h = fnv1a(key.data(), key.size(), h);
    h = fnv1a(&r.min, sizeof r.min, h);
    h = fnv1a(&r.max, sizeof r.max, h);
  }
  for (const std::string& key : plan.float_activations) h = fnv1a(key.data(), key.size(), h);
  plan.salt += " ranges " + std::to_string(h);
  return plan;
}

std::unique_ptr<GraphCopy> copy_graph(const geniex_npu_graph& desc) {
  auto c = std::make_unique<GraphCopy>();
  c->g = desc;
  c->tensors.assign(desc.tensors, desc.tensors + desc.n_tensors);
  c->ops.assign(desc.ops, desc.ops + desc.n_ops);
  c->outputs.assign(desc.outputs, desc.outputs + desc.n_outputs);
  for (geniex_npu_tensor& t : c->tensors) {
    c->names.push_back(std::make_unique<std::string>(t.name != nullptr ? t.name : ""));
    t.name = c->names.back()->c_str();
    if (t.role == GENIEX_NPU_TENSOR_WEIGHT && t.data != nullptr) {
      const auto* p = static_cast<const uint8_t*>(t.data);
      c->weights.push_back(std::make_unique<std::vector<uint8_t>>(p, p + t.data_bytes));
      t.data = c->weights.back()->data();
    }
  }
  c->g.tensors = c->tensors.data();
  c->g.ops = c->ops.data();
  c->g.outputs = c->outputs.data();
  return c;
}

Status finish_calibration(Device& dev, Compiled& c) {
  std::map<std::string, Range> local;
  for (const Probe& p : c.probes) {
    const std::vector<float>& v = c.host_outputs.at(p.host_output).data;
    Range r{0.0f, 0.0f, 0.0f};
    std::vector<float> mags;
    mags.reserve(v.size());
    for (float x : v) {
      if (!std::isfinite(x)) continue;
      r.min = std::min(r.min, x);
      r.max = std::max(r.max, x);
      mags.push_back(std::fabs(x));
    }
    if (!mags.empty()) {
      const auto k = static_cast<size_t>(0.999 * static_cast<double>(mags.size() - 1));
      std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(k), mags.end());
      r.typical = mags[k];
    }
    r = widened(r, kCalibrationMargin);
    if (dev.config.trace) {
      std::fprintf(stderr, "geniex: qnn-htp calibrated %s: [%g, %g], |x| p99.9 %g%s\n",
                   p.key.c_str(), r.min, r.max, r.typical,
                   outlier_dominated(r) ? " (outlier-dominated: fp16 activations)" : "");
    }
    if (auto it = local.find(p.key); it != local.end()) r = hull(r, it->second);
    if (named(p.key)) {
      if (auto d = dev.calibrated.find(p.key); d != dev.calibrated.end()) r = hull(r, d->second);
      dev.calibrated[p.key] = r;
    }
    local[p.key] = r;
  }
  ++dev.calibrations;
  std::unique_ptr<GraphCopy> pending = std::move(c.pending);
  GENIEX_ASSIGN_OR_RETURN(auto q, compile_graph(dev, pending->g, local));
  if (q->pending != nullptr) {
    release_graph(dev, *q);
    return internal_error("qnn-htp: a calibrated graph still lacks activation ranges");
  }
  release_graph(dev, c);
  c = std::move(*q);
  return {};
}

}  // namespace geniex::npu_qnn
