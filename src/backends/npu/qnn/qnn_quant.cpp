// The quantized HTP path's numbers (qnn_quant.h): per-channel int8 weights, 16-bit activation
// encodings and the activation-ranges file.
#include "backends/npu/qnn/qnn_quant.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/fnv1a.h"

namespace geniex::npu_qnn {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kW8A16: return "w8a16";
    case Precision::kW8: return "w8";
    case Precision::kW4A16: return "w4a16";
    default: return "fp16";
  }
}

Result<std::shared_ptr<const ActivationRanges>> load_activation_ranges(const std::string& path) {
  const std::string where = "qnn plugin: activation_ranges file '" + path + "'";
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument(where + " cannot be opened");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return invalid_argument(where + " cannot be read");
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(where + " is not JSON");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() ||
      format->get<std::string>() != "geniex.activation_ranges") {
    return invalid_argument(where +
                            " is not a geniex.activation_ranges file (`geniex imatrix "
                            "--activation-ranges FILE` writes one)");
  }
  const auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return invalid_argument(where + " has a version this plugin does not read (it reads 1)");
  }
  const auto tensors = j.find("tensors");
  if (tensors == j.end() || !tensors->is_object() || tensors->empty()) {
    return invalid_argument(where + " has no tensors");
  }
  auto r = std::make_shared<ActivationRanges>();
  r->path = path;
  if (const auto m = j.find("model"); m != j.end() && m->is_string())
    r->model = m->get<std::string>();
  for (const auto& [name, t] : tensors->items()) {
    const std::string what = where + ", tensor '" + name + "': ";
    if (!t.is_object()) return invalid_argument(what + "not an object");
    const auto mn = t.find("min"), mx = t.find("max"), tok = t.find("tokens"),
               val = t.find("values");
    if (mn == t.end() || mx == t.end() || !mn->is_number() || !mx->is_number()) {
      return invalid_argument(what + "min / max missing");
    }
    const double lo = mn->get<double>(), hi = mx->get<double>();
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi || std::fabs(lo) > 1e30 ||
        std::fabs(hi) > 1e30) {
      return invalid_argument(what + "min " + std::to_string(lo) + " / max " + std::to_string(hi) +
                              " are not a finite range");
    }
    if (tok == t.end() || val == t.end() || !tok->is_number_unsigned() ||
        !val->is_number_unsigned() || tok->get<uint64_t>() == 0 ||
        val->get<uint64_t>() % tok->get<uint64_t>() != 0) {
      return invalid_argument(what + "tokens / values missing or not a whole number of columns");
    }
    ActivationRanges::Entry e;
    e.range = {static_cast<float>(lo), static_cast<float>(hi), 0.0f};
    if (const auto p = t.find("abs_p99.9"); p != t.end() && p->is_number()) {
      const double v = p->get<double>();
      if (std::isfinite(v) && v >= 0 && v <= 1e30) e.range.typical = static_cast<float>(v);
    }
    e.columns = static_cast<int64_t>(val->get<uint64_t>() / tok->get<uint64_t>());
    r->tensors.emplace(name, e);
  }
  r->hash = fnv1a(text.data(), text.size());
  return std::shared_ptr<const ActivationRanges>(std::move(r));
}

WeightQ8 quantize_per_channel(const float* w, uint32_t n, uint32_t k, int qmax) {
  WeightQ8 out;
  out.q.resize(static_cast<size_t>(n) * k);
  out.so.resize(n);
  for (uint32_t c = 0; c < n; ++c) {
    const float* row = w + static_cast<size_t>(c) * k;
    float amax = 0.0f;
    for (uint32_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(row[i]));
    const float scale = amax > 0.0f ? amax / static_cast<float>(qmax) : 1.0f;
    out.so[c] = {scale, 0};
    int8_t* q = out.q.data() + static_cast<size_t>(c) * k;
    for (uint32_t i = 0; i < k; ++i) {
      const float v = std::nearbyint(row[i] / scale);  // default rounding: to nearest even
      q[i] =
          static_cast<int8_t>(std::clamp(v, -static_cast<float>(qmax), static_cast<float>(qmax)));
    }
  }
  return out;
}

api::ScaleOffset u16_encoding(Range r) {
  float lo = std::min(r.min, 0.0f), hi = std::max(r.max, 0.0f);
  if (hi - lo < 1e-6f) hi = lo + 1e-6f;
  const float scale = (hi - lo) / 65535.0f;
  const auto offset = static_cast<int32_t>(std::nearbyint(lo / scale));
  return {scale, std::clamp(offset, -65535, 0)};
}

Range widened(Range r, float margin) {
  const float w = (r.max - r.min) * margin;
  return {r.min - w, r.max + w, r.typical};
}

}  // namespace geniex::npu_qnn
