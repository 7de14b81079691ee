#include "quantize/imatrix_collect.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <utility>

#include "gguf/gguf_writer.h"
#include "graph/run_reference.h"
#include "models/forward_graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace geniex::quantize {
namespace {

// llama-imatrix skips batches of fewer tokens than this.
constexpr int64_t kMinTokens = 16;

struct Tap {
  std::string weight;       ///< tensor name
  graph::NodeId input = 0;  ///< the activations multiplied with it
};

void add_to_range(ActivationRange& r, std::mt19937_64& rng, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (r.n == 0) {
      r.min = r.max = v;
    } else {
      r.min = std::min(r.min, v);
      r.max = std::max(r.max, v);
    }
    r.sum_sq += static_cast<double>(v) * v;
    ++r.n;
    if (r.sample.size() < kRangeSample) {
      r.sample.push_back(v);
    } else {
      const uint64_t k = std::uniform_int_distribution<uint64_t>(0, r.n - 1)(rng);
      if (k < kRangeSample) r.sample[k] = v;
    }
  }
}

}  // namespace

float range_percentile(const ActivationRange& r, double p, bool absolute) {
  if (r.sample.empty()) return 0.0f;
  std::vector<float> v = r.sample;
  if (absolute) {
    for (float& x : v) x = std::fabs(x);
  }
  const auto n = static_cast<double>(v.size());
  auto k = static_cast<size_t>(std::max(0.0, std::ceil(p / 100.0 * n) - 1.0));
  k = std::min(k, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

Result<ImatrixStats> collect_imatrix(const gguf::GgufFile& model, std::span<const int32_t> tokens,
                                     const ImatrixOptions& opts) {
  if (opts.n_ctx < kMinTokens) {
    return invalid_argument("imatrix: the context must be at least 16 tokens");
  }
  const auto n_ctx = static_cast<size_t>(opts.n_ctx);
  if (tokens.size() < 2 * n_ctx) {
    return invalid_argument("imatrix: the text tokenizes to " + std::to_string(tokens.size()) +
                            " tokens; -c " + std::to_string(opts.n_ctx) + " needs at least " +
                            std::to_string(2 * n_ctx) + " (two chunks)");
  }
  const auto n_max = static_cast<int32_t>(tokens.size() / n_ctx);
  const int32_t n_chunks = opts.n_chunks > 0 ? std::min(opts.n_chunks, n_max) : n_max;

  GENIEX_ASSIGN_OR_RETURN(models::ModelConfig cfg, models::load_config(model));
  GENIEX_ASSIGN_OR_RETURN(models::ModelWeights w, models::bind_weights(model, cfg));
  // No output head: llama-imatrix leaves output.weight out, and the head is the largest matmul.
  models::ForwardSpec spec;
  spec.n_tokens = opts.n_ctx;
  spec.hidden_only = true;
  GENIEX_ASSIGN_OR_RETURN(models::ForwardGraph fg, models::build_forward_graph(cfg, w, spec));

  // Every MatMul whose first input is a layer weight: the weight's name and the activations.
  std::map<graph::NodeId, std::string> weight_names;
  for (const auto& b : fg.weights) weight_names[b.node] = b.tensor->name;
  std::vector<Tap> taps;
  std::set<std::pair<std::string, graph::NodeId>> seen;  // lfm2's in_proj: 3 row ranges, 1 matmul
  std::map<graph::NodeId, std::vector<float>> captured;
  for (const auto& node : fg.graph.nodes()) {
    if (node.role != graph::NodeRole::kOp || node.op != graph::OpKind::kMatMul) continue;
    auto it = weight_names.find(node.inputs[0]);
    if (it == weight_names.end() || !it->second.starts_with("blk.")) continue;
    const graph::NodeId x = node.inputs[1];
    if (!seen.insert({it->second, x}).second) continue;
    taps.push_back({it->second, x});
    captured[x].resize(static_cast<size_t>(fg.graph.node(x).desc.nelements()));
  }
  if (taps.empty()) return invalid_argument("imatrix: the model has no layer matrix products");

  ImatrixStats stats;
  stats.chunk_size = opts.n_ctx;
  std::mt19937_64 rng(0x6765'6e69'6578ULL);
  std::vector<int32_t> ids(n_ctx);
  std::vector<int32_t> pos(n_ctx);
  for (size_t i = 0; i < n_ctx; ++i) pos[i] = static_cast<int32_t>(i);
  for (int32_t c = 0; c < n_chunks; ++c) {
    if (opts.on_chunk) opts.on_chunk(c, n_chunks);
    std::memcpy(ids.data(), tokens.data() + static_cast<size_t>(c) * n_ctx,
                n_ctx * sizeof(int32_t));
    if (opts.add_bos) ids[0] = opts.bos;
    for (int32_t id : ids) {
      if (id < 0 || static_cast<uint32_t>(id) >= cfg.n_vocab) {
        return invalid_argument("imatrix: token id " + std::to_string(id) +
                                " outside the vocabulary");
      }
    }
    graph::Bindings bindings;
    bindings.bind_input(fg.token_ids, std::span<const int32_t>(ids));
    bindings.bind_input(fg.positions, std::span<const int32_t>(pos));
    models::bind_forward_weights(fg, bindings);
    for (auto& [node, buf] : captured) bindings.bind_output(node, std::span<float>(buf));
    GENIEX_TRY(graph::run_reference(fg.graph, bindings));
    for (const Tap& t : taps) {
      const auto& desc = fg.graph.node(t.input).desc;
      const auto ne0 = static_cast<size_t>(desc.ne[0]);
      const int64_t rows = desc.nrows();
      if (rows < kMinTokens) continue;
      const std::vector<float>& x = captured[t.input];
      std::vector<double>& acc = stats.sums[t.weight];
      acc.resize(ne0, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = x.data() + static_cast<size_t>(r) * ne0;
        for (size_t j = 0; j < ne0; ++j) acc[j] += static_cast<double>(row[j]) * row[j];
      }
      stats.counts[t.weight] += rows;
      if (opts.ranges) add_to_range(stats.ranges[t.weight], rng, x.data(), x.size());
      for (double v : acc) {
        if (!std::isfinite(v))
          return invalid_argument("imatrix: non-finite activations in " + t.weight);
      }
    }
    stats.chunks = c + 1;
  }
  return stats;
}

Status write_imatrix(const std::string& path, const ImatrixStats& stats,
                     const std::string& dataset) {
  using gguf::Value;
  using gguf::ValueType;
  gguf::GgufWriter wr;
  wr.set("general.type", Value::of_string("imatrix"));
  wr.set("imatrix.datasets", Value::of_string_array({dataset}));
  wr.set("imatrix.chunk_count",
         Value::of_uint(ValueType::kUint32, static_cast<uint64_t>(stats.chunks)));
  wr.set("imatrix.chunk_size",
         Value::of_uint(ValueType::kUint32, static_cast<uint64_t>(stats.chunk_size)));
  for (const auto& [name, sums] : stats.sums) {  // std::map: sorted names, as llama-imatrix
    std::vector<float> s(sums.begin(), sums.end());
    const float count = static_cast<float>(stats.counts.at(name));
    std::vector<uint8_t> sb(s.size() * sizeof(float));
    std::memcpy(sb.data(), s.data(), sb.size());
    std::vector<uint8_t> cb(sizeof(float));
    std::memcpy(cb.data(), &count, sizeof(float));
    GENIEX_TRY(wr.add_tensor(name + ".in_sum2", GgmlType::kF32, {s.size()}, sb));
    GENIEX_TRY(wr.add_tensor(name + ".counts", GgmlType::kF32, {1}, cb));
  }
  return wr.write(path);
}

}  // namespace geniex::quantize
