#include "engine/embedder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "models/forward_graph.h"
#include "quant/quant.h"

namespace geniex::engine {

namespace {

constexpr int32_t kTokenRound = 32;  // pass sizes are multiples of this (fewer graphs)
constexpr size_t kMaxShapes = 6;     // graphs kept

}  // namespace

std::optional<Pooling> pooling_from_gguf(int64_t value) {
  switch (value) {
    case 0: return Pooling::kNone;
    case 1: return Pooling::kMean;
    case 2: return Pooling::kCls;
    case 3: return Pooling::kLast;
    default: return std::nullopt;
  }
}

Pooling declared_pooling(const gguf::GgufFile& file) {
  auto arch = file.get_string("general.architecture");
  if (!arch.ok()) return Pooling::kMean;
  auto v = file.get_uint(*arch + ".pooling_type");
  if (!v.ok()) return Pooling::kMean;
  return pooling_from_gguf(static_cast<int64_t>(*v)).value_or(Pooling::kMean);
}

void l2_normalize(std::span<float> v) {
  double ss = 0.0;
  for (const float x : v) ss += static_cast<double>(x) * x;
  if (ss <= 0.0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(ss));
  for (float& x : v) x *= inv;
}

struct Embedder::Shape {
  int32_t n_tokens = 0;
  models::ForwardGraph fg;  // decoder
  models::BertGraph bg;     // bert
  const graph::Graph* graph = nullptr;
  graph::NodeId token_ids = 0, positions = 0, type_ids = models::kNoNode;
  graph::NodeId seq_rows = models::kNoNode, seq_seg = models::kNoNode, hidden = 0;
  std::vector<int32_t> ids, pos, types, rows, seg;
  std::vector<float> out;
};

Embedder::Embedder(const models::ModelConfig& config, const models::ModelWeights& weights,
                   Pooling declared)
    : config_(&config),
      weights_(&weights),
      declared_(declared),
      n_embd_(static_cast<int32_t>(config.n_embd)),
      one_per_pass_(config.has_recurrent_state()),
      n_out_(n_embd_) {}

Embedder::Embedder(models::BertConfig config, models::BertWeights weights, Pooling declared)
    : bert_config_(std::move(config)), bert_weights_(std::move(weights)), declared_(declared) {
  n_embd_ = static_cast<int32_t>(bert_config_->n_embd);
  n_out_ = n_embd_;
  max_positions_ = static_cast<int32_t>(bert_config_->context_length);
}

Embedder::~Embedder() = default;

Result<std::unique_ptr<Embedder>> Embedder::for_decoder(const models::ModelConfig& config,
                                                        const models::ModelWeights& weights,
                                                        const gguf::GgufFile& file) {
  auto e = std::make_unique<Embedder>(config, weights, engine::declared_pooling(file));
  if (config.arch_name != "gemma-embedding") return e;
  e->bidirectional_ = true;
  // Our attention's window looks back only; EmbeddingGemma's is symmetric (half each way), the
  // same whenever an input is at most half the window long.
  if (config.sliding_window > 0) {
    e->max_positions_ = static_cast<int32_t>(config.sliding_window / 2 + 1);
  }
  size_t width = config.n_embd;
  for (const char* name : {"dense_2.weight", "dense_3.weight"}) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    if (t == nullptr) continue;
    if (t->n_dims != 2 || t->ne[0] != width) {
      return invalid_argument(file.name() + ": " + name + " does not take " +
                              std::to_string(width) + "-wide vectors");
    }
    Dense d;
    d.in = width;
    d.out = static_cast<size_t>(t->ne[1]);
    d.w.resize(d.in * d.out);
    GENIEX_TRY(quant::dequantize_row(t->type, t->data, d.w));
    width = d.out;
    e->dense_.push_back(std::move(d));
  }
  e->n_out_ = static_cast<int32_t>(width);
  return e;
}

Result<Embedder::Shape*> Embedder::shape_for(int32_t n) {
  for (size_t i = 0; i < shapes_.size(); ++i) {
    if (shapes_[i]->n_tokens == n) {
      std::rotate(shapes_.begin() + static_cast<long>(i),
                  shapes_.begin() + static_cast<long>(i) + 1, shapes_.end());
      return shapes_.back().get();
    }
  }
  auto s = std::make_unique<Shape>();
  s->n_tokens = n;
  if (bert_config_) {
    GENIEX_ASSIGN_OR_RETURN(s->bg, models::build_bert_graph(*bert_config_, bert_weights_, n));
    s->graph = &s->bg.graph;
    s->token_ids = s->bg.token_ids;
    s->positions = s->bg.positions;
    s->type_ids = s->bg.type_ids;
    s->seq_rows = s->bg.seq_rows;
    s->seq_seg = s->bg.seq_seg;
    s->hidden = s->bg.hidden;
  } else {
    models::ForwardSpec spec;
    spec.n_tokens = n;
    spec.hidden_only = true;
    spec.batch_segments = !one_per_pass_;
    spec.bidirectional = bidirectional_;
    GENIEX_ASSIGN_OR_RETURN(s->fg, models::build_forward_graph(*config_, *weights_, spec));
    s->graph = &s->fg.graph;
    s->token_ids = s->fg.token_ids;
    s->positions = s->fg.positions;
    s->seq_rows = s->fg.seq_rows;
    s->seq_seg = s->fg.seq_seg;
    s->hidden = s->fg.hidden;
  }
  const auto un = static_cast<size_t>(n);
  s->ids.resize(un);
  s->pos.resize(un);
  s->types.assign(un, 0);
  s->rows.resize(un);
  for (size_t i = 0; i < un; ++i) s->rows[i] = static_cast<int32_t>(i);
  s->seg.resize(2 * un);
  s->out.resize(un * static_cast<size_t>(n_embd_));
  if (shapes_.size() >= kMaxShapes) shapes_.erase(shapes_.begin());
  shapes_.push_back(std::move(s));
  return shapes_.back().get();
}

Status Embedder::run_batch(std::span<const std::vector<int32_t>> inputs,
                           std::span<const size_t> batch, Pooling pooling,
                           runtime::Scheduler& scheduler, Embeddings& out) {
  int32_t used = 0;
  for (const size_t i : batch) used += static_cast<int32_t>(inputs[i].size());
  // Padding is a sequence of its own (positions from 0, fewer than kTokenRound).
  const int32_t n = (used + kTokenRound - 1) / kTokenRound * kTokenRound;
  GENIEX_ASSIGN_OR_RETURN(Shape * s, shape_for(n));
  int32_t at = 0;
  const auto fill = [&](std::span<const int32_t> ids, bool pad) {
    const int32_t begin = at;
    const auto len = static_cast<int32_t>(ids.size());
    for (int32_t j = 0; j < len; ++j) {
      const auto t = static_cast<size_t>(at + j);
      s->ids[t] = pad ? 0 : ids[static_cast<size_t>(j)];
      s->pos[t] = j;
      s->seg[2 * t] = begin;
      s->seg[2 * t + 1] = begin + len;
    }
    at += len;
  };
  for (const size_t i : batch) fill(inputs[i], false);
  if (at < n) {
    const std::vector<int32_t> pad(static_cast<size_t>(n - at), 0);
    fill(pad, true);
  }
  graph::Bindings b;
  b.bind_input(s->token_ids, std::span<const int32_t>(s->ids));
  b.bind_input(s->positions, std::span<const int32_t>(s->pos));
  if (s->type_ids != models::kNoNode) b.bind_input(s->type_ids, std::span<const int32_t>(s->types));
  if (s->seq_rows != models::kNoNode) {
    b.bind_input(s->seq_rows, std::span<const int32_t>(s->rows));
    b.bind_input(s->seq_seg, std::span<const int32_t>(s->seg));
  }
  if (bert_config_) {
    models::bind_bert_weights(s->bg, b);
  } else {
    models::bind_forward_weights(s->fg, b);
  }
  b.bind_output(s->hidden, std::span<float>(s->out));
  GENIEX_TRY(scheduler.run(*s->graph, b));

  const auto e = static_cast<size_t>(n_embd_);
  size_t row = 0;
  for (const size_t i : batch) {
    const size_t len = inputs[i].size();
    const float* h = s->out.data() + row * e;
    std::vector<float>& v = out.vectors[i];
    switch (pooling) {
      case Pooling::kNone: v.assign(h, h + len * e); break;
      case Pooling::kCls: v.assign(h, h + e); break;
      case Pooling::kLast: v.assign(h + (len - 1) * e, h + len * e); break;
      case Pooling::kMean:
      case Pooling::kModel: {
        std::vector<double> acc(e, 0.0);
        for (size_t t = 0; t < len; ++t) {
          for (size_t c = 0; c < e; ++c) acc[c] += h[t * e + c];
        }
        v.resize(e);
        for (size_t c = 0; c < e; ++c) v[c] = static_cast<float>(acc[c] / static_cast<double>(len));
        break;
      }
    }
    row += len;
  }
  return {};
}

Result<Embeddings> Embedder::run(std::span<const std::vector<int32_t>> inputs, Pooling pooling,
                                 bool normalize, int32_t dimensions, runtime::Scheduler& scheduler,
                                 int32_t n_batch) {
  const auto t0 = std::chrono::steady_clock::now();
  if (pooling == Pooling::kModel) pooling = declared_;
  Embeddings out;
  out.vectors.resize(inputs.size());
  out.pooling = pooling;
  out.n_dims = dimensions > 0 ? dimensions : n_out_;
  for (const auto& in : inputs) {
    out.n_tokens.push_back(static_cast<int32_t>(in.size()));
    out.prompt_tokens += static_cast<int32_t>(in.size());
  }
  // Greedy packing in input order: a pass holds inputs while they fit n_batch tokens (an input
  // longer than n_batch runs alone).
  std::vector<size_t> batch;
  int32_t tokens = 0;
  for (size_t i = 0; i <= inputs.size(); ++i) {
    const int32_t len = i < inputs.size() ? static_cast<int32_t>(inputs[i].size()) : 0;
    const bool flush =
        i == inputs.size() || (!batch.empty() && (one_per_pass_ || tokens + len > n_batch));
    if (flush && !batch.empty()) {
      GENIEX_TRY(run_batch(inputs, batch, pooling, scheduler, out));
      batch.clear();
      tokens = 0;
    }
    if (i < inputs.size()) {
      batch.push_back(i);
      tokens += len;
    }
  }
  for (auto& v : out.vectors) {  // dense projections, per pooled vector (per token with kNone)
    for (const Dense& dn : dense_) {
      const size_t rows = v.size() / dn.in;
      std::vector<float> y(rows * dn.out);
      for (size_t r = 0; r < rows; ++r) {
        const float* x = v.data() + r * dn.in;
        for (size_t o = 0; o < dn.out; ++o) {
          const float* w = dn.w.data() + o * dn.in;
          double acc = 0.0;
          for (size_t c = 0; c < dn.in; ++c) acc += static_cast<double>(w[c]) * x[c];
          y[r * dn.out + o] = static_cast<float>(acc);
        }
      }
      v = std::move(y);
    }
  }
  const auto e = static_cast<size_t>(n_out_);
  const auto d = static_cast<size_t>(out.n_dims);
  for (auto& v : out.vectors) {
    const size_t rows = v.size() / e;
    if (d < e) {
      for (size_t r = 0; r < rows; ++r) {
        std::copy_n(v.begin() + static_cast<long>(r * e), d, v.begin() + static_cast<long>(r * d));
      }
      v.resize(rows * d);
    }
    if (normalize) {
      for (size_t r = 0; r < rows; ++r) l2_normalize(std::span<float>(v).subspan(r * d, d));
    }
  }
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace geniex::engine
