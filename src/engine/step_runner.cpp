// StepRunner: builds (or reuses) the forward graph of a batch and fills its KV addressing.
#include "engine/step_runner.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace geniex::engine {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

constexpr int32_t kBucket = 256;  // KV list entries per bucket
constexpr size_t kMaxGraphs = 6;  // cached step graphs

int32_t bucket(int32_t n) { return (n + kBucket - 1) / kBucket * kBucket; }

}  // namespace

struct StepRunner::Step {
  std::vector<int32_t> key;
  models::ForwardGraph fg;
  graph::Bindings b;
  std::vector<int32_t> tokens, pos, out_rows;
  std::vector<std::vector<int32_t>> slots, rows, kpos, seg;  // per layer
  // Short-conv layers (lfm2): each token's state slot (its item), and per layer the items'
  // states gathered before the run and the advanced states, scattered back after a success.
  std::vector<int32_t> conv_seq;
  std::vector<std::vector<float>> conv_in, conv_out;  // per layer (empty on attention layers)
  std::vector<std::vector<float>> conv_u;             // per conv layer of a snapshot step: u [E, T]
  std::vector<float> logits;
  std::vector<float> keep, inject;  // with image rows: embedding * keep + inject
  std::span<const StepItem> items;  // of the run in progress (read by hooks)
  runtime::KvLayerView view;
  uint64_t last_use = 0;
};

StepRunner::StepRunner(const models::ModelConfig& config, const models::ModelWeights& weights,
                       runtime::Scheduler& scheduler, runtime::KvManager& kv)
    : config_(config), weights_(weights), scheduler_(scheduler), kv_(kv) {}
StepRunner::~StepRunner() = default;

Result<StepRunner::Step*> StepRunner::step_for(std::span<const StepItem> items, int32_t n_tokens,
                                               int32_t n_out, bool snapshots) {
  const auto n_layer = static_cast<int>(config_.n_layer);
  const bool segments = items.size() > 1;
  const bool conv = config_.has_recurrent_state();
  const auto n_items = static_cast<int32_t>(items.size());
  // The first three entries, then one per layer (read below as key[3 + il]), then the state
  // slots of a model with conv layers and whether the step yields u (snapshots).
  bool inject = false;
  for (const auto& it : items) {
    inject = inject || std::any_of(it.embd_rows.begin(), it.embd_rows.end(),
                                   [](int32_t r) { return r >= 0; });
  }
  std::vector<int32_t> key = {n_tokens, n_out, (segments ? 1 : 0) + (inject ? 2 : 0)};
  for (int il = 0; il < n_layer; ++il) {
    int32_t n = 0;
    if (!config_.layer_is_conv(static_cast<uint32_t>(il))) {
      for (const auto& it : items) n += kv_.layer_view_size(it.seq, il);
    }
    key.push_back(bucket(n));
  }
  if (conv) {
    key.push_back(n_items);
    key.push_back(snapshots ? 1 : 0);
  }
  for (auto& st : steps_) {
    if (st->key == key) {
      st->last_use = ++clock_;
      return st.get();
    }
  }
  models::ForwardSpec spec;
  spec.n_tokens = n_tokens;
  spec.n_outputs = n_out;
  spec.kv_type = kv_.spec().type;
  spec.segments = segments;
  spec.conv_slots = n_items;
  spec.inject = inject;
  for (int il = 0; il < n_layer; ++il) {
    const bool conv_layer = config_.layer_is_conv(static_cast<uint32_t>(il));
    spec.kv_list.push_back(key[sz(3 + il)]);
    spec.kv_state_rows.push_back(conv_layer ? 0 : kv_.store(il).n_rows());
  }
  GENIEX_ASSIGN_OR_RETURN(auto fg, models::build_forward_graph(config_, weights_, spec));
  auto st = std::make_unique<Step>();
  st->key = std::move(key);
  st->fg = std::move(fg);
  st->tokens.resize(sz(n_tokens));
  st->pos.resize(sz(n_tokens));
  st->out_rows.resize(sz(n_out));
  st->logits.resize(sz(n_out) * config_.n_vocab);
  st->slots.resize(sz(n_layer));
  st->rows.resize(sz(n_layer));
  st->kpos.resize(sz(n_layer));
  st->seg.resize(sz(n_layer));
  st->conv_in.resize(sz(n_layer));
  st->conv_out.resize(sz(n_layer));
  st->conv_u.resize(sz(n_layer));
  graph::Bindings& b = st->b;
  const models::ForwardGraph& g = st->fg;
  b.bind_input(g.token_ids, std::span<const int32_t>(st->tokens));
  b.bind_input(g.positions, std::span<const int32_t>(st->pos));
  b.bind_input(g.output_rows, std::span<const int32_t>(st->out_rows));
  models::bind_forward_weights(g, b);
  if (inject) {
    st->keep.resize(sz(n_tokens));
    st->inject.resize(sz(n_tokens) * config_.n_embd);
    b.bind_input(g.embd_keep, std::span<const float>(st->keep));
    b.bind_input(g.embd_inject, std::span<const float>(st->inject));
  }
  if (conv) {
    st->conv_seq.resize(sz(n_tokens));
    b.bind_input(g.conv_seq, std::span<const int32_t>(st->conv_seq));
  }
  for (int il = 0; il < n_layer; ++il) {
    const auto l = sz(il);
    if (config_.layer_is_conv(static_cast<uint32_t>(il))) {
      const auto n = sz(config_.layer_state_bytes(static_cast<uint32_t>(il)) / 4 * n_items);
      st->conv_in[l].resize(n);
      st->conv_out[l].resize(n);
      b.bind_input(g.conv_state[l], std::span<const float>(st->conv_in[l]));
      b.bind_output(g.conv_state_out[l], std::span<float>(st->conv_out[l]));
      if (conv && snapshots) {
        st->conv_u[l].resize(sz(config_.n_embd) * sz(n_tokens));
        b.bind_output(g.conv_u[l], std::span<float>(st->conv_u[l]));
      }
      continue;
    }
    st->slots[l].resize(sz(n_tokens));
    st->rows[l].resize(sz(spec.kv_list[l]));
    st->kpos[l].resize(sz(spec.kv_list[l]));
    b.bind_input(g.kv_slots[l], std::span<const int32_t>(st->slots[l]));
    b.bind_input(g.kv_rows[l], std::span<const int32_t>(st->rows[l]));
    b.bind_input(g.kv_pos[l], std::span<const int32_t>(st->kpos[l]));
    if (segments) {
      st->seg[l].resize(2 * sz(n_tokens));
      b.bind_input(g.kv_seg[l], std::span<const int32_t>(st->seg[l]));
    }
    b.bind_state(g.k_cache[l], kv_.spec().type, kv_.store(il).k_buffer());
    b.bind_state(g.v_cache[l], kv_.spec().type, kv_.store(il).v_buffer());
    if (kv_.spills()) {
      Step* sp = st.get();
      b.add_hook(g.cache_write[l], [this, sp, il] { return fill_layer(*sp, sp->items, il); });
    }
  }
  b.bind_output(g.logits, std::span<float>(st->logits));
  st->last_use = ++clock_;
  ++graphs_built_;
  if (steps_.size() >= kMaxGraphs) {
    auto oldest = std::min_element(steps_.begin(), steps_.end(), [](const auto& a, const auto& c) {
      return a->last_use < c->last_use;
    });
    steps_.erase(oldest);
  }
  steps_.push_back(std::move(st));
  return steps_.back().get();
}

Status StepRunner::fill_layer(Step& st, std::span<const StepItem> items, int il) {
  const auto l = sz(il);
  auto& rows = st.rows[l];
  auto& kpos = st.kpos[l];
  auto& slots = st.slots[l];
  size_t n = 0, t = 0;
  for (const auto& it : items) {
    GENIEX_TRY(kv_.layer_view(it.seq, il, st.view));
    if (n + st.view.rows.size() > rows.size() || t + st.view.slots.size() > slots.size()) {
      return internal_error("step: KV view of layer " + std::to_string(il) + " outgrew its graph");
    }
    std::copy(st.view.rows.begin(), st.view.rows.end(), rows.begin() + static_cast<long>(n));
    std::copy(st.view.pos.begin(), st.view.pos.end(), kpos.begin() + static_cast<long>(n));
    std::copy(st.view.slots.begin(), st.view.slots.end(), slots.begin() + static_cast<long>(t));
    if (!st.seg[l].empty()) {
      for (size_t k = 0; k < it.tokens.size(); ++k) {
        st.seg[l][2 * (t + k)] = static_cast<int32_t>(n);
        st.seg[l][2 * (t + k) + 1] = static_cast<int32_t>(n + st.view.rows.size());
      }
    }
    n += st.view.rows.size();
    t += it.tokens.size();
  }
  std::fill(rows.begin() + static_cast<long>(n), rows.end(), 0);
  std::fill(kpos.begin() + static_cast<long>(n), kpos.end(), -1);
  if (t < slots.size()) {
    // Padding tokens of a static-shape step: K/V into the never-read scratch rows, and (with
    // segments) an empty key range.
    GENIEX_ASSIGN_OR_RETURN(const int64_t scratch, kv_.scratch_row(il));
    const auto bs = static_cast<size_t>(kv_.spec().block_size);
    for (size_t k = t; k < slots.size(); ++k) {
      slots[k] = static_cast<int32_t>(scratch + static_cast<int64_t>(k % bs));
      if (!st.seg[l].empty()) st.seg[l][2 * k] = st.seg[l][2 * k + 1] = 0;
    }
  }
  return {};
}

void StepRunner::gather_conv_states(Step& st, std::span<const StepItem> items) {
  if (st.conv_seq.empty()) return;
  size_t t = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::fill_n(st.conv_seq.begin() + static_cast<long>(t), items[i].tokens.size(),
                static_cast<int32_t>(i));
    t += items[i].tokens.size();
  }
  std::fill(st.conv_seq.begin() + static_cast<long>(t), st.conv_seq.end(), -1);  // padding
  for (size_t l = 0; l < st.conv_in.size(); ++l) {
    if (st.conv_in[l].empty()) continue;
    const size_t per = st.conv_in[l].size() / items.size();
    for (size_t i = 0; i < items.size(); ++i) {
      const auto src = kv_.layer_state(items[i].seq, static_cast<int>(l));
      std::memcpy(st.conv_in[l].data() + i * per, src.data(), per * sizeof(float));
    }
  }
}

void StepRunner::scatter_conv_states(Step& st, std::span<const StepItem> items) {
  for (size_t l = 0; l < st.conv_out.size(); ++l) {
    if (st.conv_out[l].empty()) continue;
    const size_t per = st.conv_out[l].size() / items.size();
    for (size_t i = 0; i < items.size(); ++i) {
      const auto dst = kv_.layer_state(items[i].seq, static_cast<int>(l));
      std::memcpy(dst.data(), st.conv_out[l].data() + i * per, per * sizeof(float));
    }
  }
}

Status StepRunner::take_snapshots(Step& st, std::span<const StepItem> items) {
  const auto e = sz(config_.n_embd);
  const auto hist = sz(config_.conv_taps) - 1;  // state columns
  snap_buf_.resize(sz(kv_.snapshot_bytes()));
  size_t t0 = 0;  // the item's first token in the step
  for (size_t i = 0; i < items.size(); ++i) {
    for (const int32_t k : snap_points_[i]) {
      // The state after item token k: the last `hist` columns of (old state ++ u of tokens
      // 0..k), i.e. columns k + 1 .. k + hist of that history.
      size_t off = 0;
      for (size_t l = 0; l < st.conv_in.size(); ++l) {
        if (st.conv_in[l].empty()) continue;
        const size_t per = st.conv_in[l].size() / items.size();  // = e * hist
        if (st.conv_u[l].empty() || off + per * sizeof(float) > snap_buf_.size()) {
          return internal_error("step: no u output for the snapshot of layer " + std::to_string(l));
        }
        auto* dst = reinterpret_cast<float*>(snap_buf_.data() + off);
        for (size_t j = 0; j < hist; ++j) {
          const size_t h = sz(k) + 1 + j;
          const float* src = h < hist ? st.conv_in[l].data() + i * per + h * e
                                      : st.conv_u[l].data() + (t0 + h - hist) * e;
          std::memcpy(dst + j * e, src, e * sizeof(float));
        }
        off += per * sizeof(float);
      }
      if (off != snap_buf_.size()) return internal_error("step: snapshot size mismatch");
      GENIEX_TRY(kv_.set_snapshot(items[i].seq, k, snap_buf_));
    }
    t0 += items[i].tokens.size();
  }
  return {};
}

int32_t StepRunner::padded_tokens(int32_t n) const {
  for (int32_t c : static_batches_) {
    if (c >= n) return c;
  }
  return n;
}

Result<std::span<const float>> StepRunner::run(std::span<const StepItem> items) {
  if (items.empty()) return invalid_argument("step: no sequences");
  size_t begun = 0;
  auto rollback = [&](Status s) {
    for (size_t i = 0; i < begun; ++i) kv_.end_step(items[i].seq, false);
    return s;
  };
  int32_t n_tokens = 0, n_out = 0;
  for (const auto& it : items) {
    Status s = kv_.begin_step(it.seq, it.tokens);
    if (!s.ok()) return rollback(s);
    ++begun;
    n_tokens += static_cast<int32_t>(it.tokens.size());
    n_out += it.n_outputs;
  }
  const int32_t n_real = n_tokens;
  n_tokens = padded_tokens(n_real);
  // Sequences that fill a block in this step keep a snapshot of the states at its end.
  bool snapshots = false;
  if (kv_.snapshot_bytes() > 0) {
    snap_points_.resize(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      kv_.snapshot_points(items[i].seq, snap_points_[i]);
      snapshots = snapshots || !snap_points_[i].empty();
    }
  }
  auto stp = step_for(items, n_tokens, n_out, snapshots);
  if (!stp.ok()) return rollback(stp.status());
  Step& st = **stp;
  st.items = items;
  if (n_tokens > n_real) {
    // Padding repeats the last real token's position; its outputs are never read.
    const auto last = kv_.step_positions(items.back().seq);
    std::fill(st.tokens.begin() + n_real, st.tokens.end(), 0);
    std::fill(st.pos.begin() + n_real, st.pos.end(), last.empty() ? 0 : last.back());
  }
  size_t t = 0, o = 0;
  const size_t e = config_.n_embd;
  if (!st.keep.empty()) {
    std::fill(st.keep.begin(), st.keep.end(), 1.0f);
    std::fill(st.inject.begin(), st.inject.end(), 0.0f);
  }
  for (const auto& it : items) {
    const auto pos = kv_.step_positions(it.seq);
    for (size_t k = 0; k < it.tokens.size(); ++k) {
      st.tokens[t + k] = it.tokens[k];
      const int32_t row = k < it.embd_rows.size() ? it.embd_rows[k] : -1;
      if (row >= 0) {
        if (st.keep.empty() || (static_cast<size_t>(row) + 1) * e > it.embd_table.size())
          return rollback(internal_error("step: image row " + std::to_string(row) +
                                         " outside the item's table"));
        st.tokens[t + k] = 0;  // never read: keep = 0
        st.keep[t + k] = 0.0f;
        std::copy_n(it.embd_table.data() + static_cast<size_t>(row) * e, e,
                    st.inject.data() + (t + k) * e);
      } else if (it.tokens[k] < 0 || static_cast<uint32_t>(it.tokens[k]) >= config_.n_vocab) {
        return rollback(internal_error("step: token " + std::to_string(it.tokens[k]) +
                                       " outside the vocabulary and without an image row"));
      }
      st.pos[t + k] = pos[k];
      if (k + static_cast<size_t>(it.n_outputs) >= it.tokens.size()) {
        st.out_rows[o++] = static_cast<int32_t>(t + k);
      }
    }
    t += it.tokens.size();
  }
  if (!kv_.spills()) {
    for (int il = 0; il < static_cast<int>(config_.n_layer); ++il) {
      if (config_.layer_is_conv(static_cast<uint32_t>(il))) continue;
      Status s = fill_layer(st, items, il);
      if (!s.ok()) return rollback(s);
    }
  }
  gather_conv_states(st, items);
  Status s = scheduler_.run(st.fg.graph, st.b);
  st.items = {};
  if (!s.ok()) return rollback(s);
  // Only a step that ran advances the conv states (a failed one leaves them, like the KV).
  scatter_conv_states(st, items);
  if (snapshots) {
    // A missing snapshot only costs reuse later; the step itself succeeded.
    (void)take_snapshots(st, items);
  }
  for (const auto& it : items) kv_.end_step(it.seq, true);
  return std::span<const float>(st.logits);
}

}  // namespace geniex::engine
