// KvManager: block tables, prefix cache, copy-on-write, sliding-window trimming, shift.
#include "runtime/kv_manager.h"

#include <algorithm>
#include <limits>
#include <map>

#include "runtime/kv_manager_internal.h"

namespace geniex::runtime {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

KvManager::KvManager(KvManagerSpec spec)
    : spec_(std::move(spec)), impl_(std::make_unique<Impl>()) {}
KvManager::~KvManager() = default;

Result<std::unique_ptr<KvManager>> KvManager::create(const KvManagerSpec& spec) {
  if (spec.block_size < 1 || spec.n_ctx < 1 || spec.n_seq_max < 1 || spec.n_batch < 1 ||
      spec.layers.empty()) {
    return invalid_argument(
        "KV cache: block size, context, sequences, batch and layers must be >0");
  }
  std::unique_ptr<KvManager> m(new KvManager(spec));
  const int64_t B = spec.block_size;
  const int64_t ctx_blocks = ceil_div(spec.n_ctx, B) + 1;  // +1: copy-on-write of a partial block
  m->max_blocks_ = int64_t{spec.n_seq_max} * ctx_blocks + ctx_blocks;  // + one context of cache

  // Group layers by row sizes: one store (frame pool) per group.
  std::map<std::pair<int64_t, int64_t>, int> groups;
  std::vector<int64_t> need_frames;  // per store, without budget
  std::vector<std::pair<int64_t, int64_t>> rows;
  m->layer_store_.assign(spec.layers.size(), -1);
  for (size_t il = 0; il < spec.layers.size(); ++il) {
    const auto& l = spec.layers[il];
    m->snapshot_bytes_ += std::max<int64_t>(l.state_bytes, 0);
    if (l.k_row_elems <= 0 || l.v_row_elems <= 0) continue;  // no KV (recurrent-only layer)
    auto key = std::make_pair(l.k_row_elems, l.v_row_elems);
    auto it = groups.find(key);
    if (it == groups.end()) {
      it = groups.emplace(key, static_cast<int>(rows.size())).first;
      rows.push_back(key);
      need_frames.push_back(0);
    }
    m->layer_store_[il] = it->second;
    int64_t per_seq = ctx_blocks;
    if (l.sliding_window > 0) {
      per_seq = std::min<int64_t>(ctx_blocks,
                                  ceil_div(int64_t{l.sliding_window} + spec.n_batch + B, B) + 2);
    }
    need_frames[sz(it->second)] += per_seq * spec.n_seq_max + ctx_blocks;
  }
  if (rows.empty()) return invalid_argument("KV cache: no layer has K/V rows");

  int64_t need_bytes = 0;
  std::vector<size_t> frame_bytes(rows.size());
  for (size_t g = 0; g < rows.size(); ++g) {
    const auto kb = ggml_row_bytes(spec.type, static_cast<uint64_t>(rows[g].first));
    const auto vb = ggml_row_bytes(spec.type, static_cast<uint64_t>(rows[g].second));
    if (!kb || !vb) {
      return invalid_argument("KV cache type " + std::string(ggml_type_name(spec.type)) +
                              " needs K/V rows that are whole blocks of " +
                              std::to_string(traits(spec.type).block_size) + " (rows of " +
                              std::to_string(rows[g].first) + " and " +
                              std::to_string(rows[g].second) + ")");
    }
    frame_bytes[g] = sz(B) * (*kb + *vb);
    need_bytes += need_frames[g] * static_cast<int64_t>(frame_bytes[g]);
  }
  for (size_t g = 0; g < rows.size(); ++g) {
    KvStoreSpec ss;
    ss.type = spec.type;
    ss.block_size = spec.block_size;
    ss.k_row_elems = rows[g].first;
    ss.v_row_elems = rows[g].second;
    int64_t frames = need_frames[g] + 1;  // + the scratch frame (scratch_row), reserved only
    if (spec.budget_bytes > 0 && static_cast<int64_t>(spec.budget_bytes) < need_bytes) {
      // The budget split by need; this store spills past its share.
      const double share = static_cast<double>(need_frames[g]) *
                           static_cast<double>(frame_bytes[g]) / static_cast<double>(need_bytes);
      frames = static_cast<int64_t>(static_cast<double>(spec.budget_bytes) * share /
                                    static_cast<double>(frame_bytes[g]));
      if (frames < 1) {
        return invalid_argument("KV budget of " + std::to_string(spec.budget_bytes) +
                                " bytes is smaller than one block (" +
                                std::to_string(frame_bytes[g]) + " bytes)");
      }
      ss.spill_dir = spec.spill_dir.empty() ? "/tmp" : spec.spill_dir;
    }
    if (frames > std::numeric_limits<int32_t>::max() / spec.block_size) {
      return invalid_argument(
          "KV cache: a context of " + std::to_string(spec.n_ctx) + " tokens for " +
          std::to_string(spec.n_seq_max) + " sequences needs " + std::to_string(frames) +
          " blocks of " + std::to_string(spec.block_size) + " cells; one pool holds at most " +
          std::to_string(std::numeric_limits<int32_t>::max() / spec.block_size) +
          " blocks: give a smaller context size");
    }
    ss.n_frames = static_cast<int32_t>(frames);
    GENIEX_ASSIGN_OR_RETURN(auto store, KvStore::create(ss));
    m->stores_.push_back(std::move(store));
  }
  m->impl_->seqs.resize(sz(spec.n_seq_max));
  return m;
}

KvStore& KvManager::store(int il) const { return *stores_[sz(layer_store_[sz(il)])]; }

Result<int64_t> KvManager::scratch_row(int il) {
  const int s = layer_store_[sz(il)];
  if (s < 0) return invalid_argument("KV cache: layer " + std::to_string(il) + " has no K/V");
  if (scratch_.size() < stores_.size()) scratch_.resize(stores_.size(), -1);
  int32_t& h = scratch_[sz(s)];
  KvStore& st = *stores_[sz(s)];
  if (h < 0) {
    GENIEX_ASSIGN_OR_RETURN(h, st.alloc());
    st.pin(h);  // never evicted: a step may write it at any layer
  }
  GENIEX_TRY(st.make_resident(h));
  return int64_t{st.frame(h)} * spec_.block_size;
}

size_t KvManager::bytes_per_token() const {
  size_t n = 0;
  for (size_t il = 0; il < spec_.layers.size(); ++il) {
    if (layer_store_[il] < 0) continue;
    const KvStore& s = *stores_[sz(layer_store_[il])];
    n += s.k_row_bytes() + s.v_row_bytes();
  }
  return n;
}

KvManager::Sequence& KvManager::seq_ref(SeqId seq) { return impl_->seqs[sz(seq)]; }
const KvManager::Sequence& KvManager::seq_ref(SeqId seq) const { return impl_->seqs[sz(seq)]; }

Result<KvManager::SeqId> KvManager::open_sequence() {
  for (size_t i = 0; i < impl_->seqs.size(); ++i) {
    Sequence& s = impl_->seqs[i];
    if (s.open) continue;
    s = Sequence{};
    s.open = true;
    s.state.resize(spec_.layers.size());
    for (size_t il = 0; il < spec_.layers.size(); ++il) {
      s.state[il].assign(sz(spec_.layers[il].state_bytes), 0);
    }
    return static_cast<SeqId>(i);
  }
  return resource_exhausted("KV cache: all " + std::to_string(spec_.n_seq_max) +
                            " sequences are in use");
}

void KvManager::close_sequence(SeqId seq) {
  Sequence& s = seq_ref(seq);
  if (!s.open) return;
  if (s.in_step) end_step(seq, false);
  for (int32_t b : s.table) {
    if (b >= 0) drop_block_ref(b);
  }
  s = Sequence{};
}

void KvManager::clear_prefix_cache() {
  for (size_t b = 0; b < impl_->blocks.size(); ++b) {
    if (impl_->blocks[b].live && impl_->blocks[b].refs == 0) free_block(static_cast<int32_t>(b));
  }
}

int32_t KvManager::n_tokens(SeqId seq) const {
  return static_cast<int32_t>(seq_ref(seq).tokens.size());
}
std::span<const int32_t> KvManager::tokens(SeqId seq) const { return seq_ref(seq).tokens; }
int32_t KvManager::next_pos(SeqId seq) const { return n_tokens(seq); }

// ---------------------------------------------------------------------------------------------
// Blocks

Result<int32_t> KvManager::new_block() {
  Impl& im = *impl_;
  while (im.live_blocks >= max_blocks_) {
    if (!evict_cached_block()) {
      return resource_exhausted("KV cache: all " + std::to_string(max_blocks_) +
                                " blocks are held by sequences");
    }
  }
  int32_t b;
  if (!im.free_blocks.empty()) {
    b = im.free_blocks.back();
    im.free_blocks.pop_back();
  } else {
    b = static_cast<int32_t>(im.blocks.size());
    im.blocks.emplace_back();
  }
  Block& blk = im.blocks[sz(b)];
  blk = Block{};
  blk.live = true;
  blk.refs = 1;
  blk.last_use = ++im.clock;
  blk.handle.assign(spec_.layers.size(), -1);
  ++im.live_blocks;
  for (size_t il = 0; il < spec_.layers.size(); ++il) {
    if (layer_store_[il] < 0) continue;
    KvStore& st = *stores_[sz(layer_store_[il])];
    auto h = st.alloc();
    while (!h.ok() && h.status().code() == StatusCode::kResourceExhausted && evict_cached_block()) {
      h = st.alloc();
    }
    if (!h.ok()) {
      free_block(b);
      return h.status();
    }
    im.blocks[sz(b)].handle[il] = *h;
  }
  return b;
}

void KvManager::free_block(int32_t b) {
  Impl& im = *impl_;
  Block& blk = im.blocks[sz(b)];
  if (!blk.live) return;
  for (size_t il = 0; il < blk.handle.size(); ++il) {
    if (blk.handle[il] >= 0) stores_[sz(layer_store_[il])]->release(blk.handle[il]);
  }
  if (blk.hashed) {
    auto it = im.prefix.find(blk.hash);
    if (it != im.prefix.end() && it->second == b) im.prefix.erase(it);
  }
  blk = Block{};
  im.free_blocks.push_back(b);
  --im.live_blocks;
}

void KvManager::drop_block_ref(int32_t b) {
  Block& blk = impl_->blocks[sz(b)];
  if (--blk.refs > 0) return;
  if (blk.hashed && spec_.prefix_cache) {
    blk.last_use = ++impl_->clock;  // stays in the prefix cache
    return;
  }
  free_block(b);
}

bool KvManager::evict_cached_block() {
  Impl& im = *impl_;
  int32_t victim = -1;
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  for (size_t b = 0; b < im.blocks.size(); ++b) {
    const Block& blk = im.blocks[b];
    if (blk.live && blk.refs == 0 && blk.last_use < oldest) {
      oldest = blk.last_use;
      victim = static_cast<int32_t>(b);
    }
  }
  if (victim < 0) return false;
  free_block(victim);
  return true;
}

// Gives sequence s its own copy of table entry ti (copy-on-write) and unhashes it, so that its
// cells can be written.
Status KvManager::make_exclusive(Sequence& s, size_t ti) {
  Impl& im = *impl_;
  const int32_t b = s.table[ti];
  if (im.blocks[sz(b)].refs > 1) {
    GENIEX_ASSIGN_OR_RETURN(int32_t nb, new_block());
    for (size_t il = 0; il < spec_.layers.size(); ++il) {
      const int32_t src = im.blocks[sz(b)].handle[il];
      const int32_t dst = im.blocks[sz(nb)].handle[il];
      if (dst < 0) continue;
      KvStore& st = *stores_[sz(layer_store_[il])];
      if (src < 0) {  // trimmed in the original: nothing to copy
        st.release(dst);
        im.blocks[sz(nb)].handle[il] = -1;
        continue;
      }
      GENIEX_TRY(st.copy(src, dst));
    }
    im.blocks[sz(nb)].snap = im.blocks[sz(b)].snap;  // the copy is the same block so far
    --im.blocks[sz(b)].refs;
    s.table[ti] = nb;
    return {};
  }
  Block& blk = im.blocks[sz(b)];
  if (blk.hashed) {
    auto it = im.prefix.find(blk.hash);
    if (it != im.prefix.end() && it->second == b) im.prefix.erase(it);
    blk.hashed = false;
    blk.tokens.clear();
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Prefix reuse and truncation

bool KvManager::frames_needed_present(const Sequence& s, int32_t n_cells) const {
  const int32_t B = spec_.block_size;
  int32_t next = 0;  // position of the next token: one past the last live cell
  for (int32_t c = 0; c < n_cells; ++c) next = std::max(next, s.cell_pos[sz(c)] + 1);
  for (size_t il = 0; il < spec_.layers.size(); ++il) {
    const int32_t w = spec_.layers[il].sliding_window;
    if (layer_store_[il] < 0 || w <= 0) continue;
    // Queries from position `next` on see keys at positions > next - w.
    for (int32_t c = 0; c < n_cells; ++c) {
      if (s.cell_pos[sz(c)] <= next - w) continue;
      const int32_t b = s.table[sz(c / B)];
      if (b < 0 || impl_->blocks[sz(b)].handle[il] < 0) return false;
      c = (c / B + 1) * B - 1;  // next block
    }
  }
  return true;
}

int32_t KvManager::truncate(SeqId seq, int32_t n) {
  Sequence& s = seq_ref(seq);
  const int32_t B = spec_.block_size;
  n = std::clamp(n, 0, static_cast<int32_t>(s.tokens.size()));
  int32_t restore_from = -1;  // block whose snapshot holds the states after token n - 1
  if (snapshot_bytes_ > 0 && n != static_cast<int32_t>(s.tokens.size())) {
    // A state can't roll back: resume at the last block boundary <= n with a snapshot, taken
    // where every earlier token sat at its own position (so cell == token index).
    int32_t k = n / B;
    while (k > 0) {
      const int32_t c = k * B - 1;
      const int32_t b = s.table[sz(k - 1)];
      if (b >= 0 && s.cell_pos[sz(c)] == c && !impl_->blocks[sz(b)].snap.empty()) break;
      --k;
    }
    n = k * B;
    if (k > 0) restore_from = s.table[sz(k - 1)];
  }
  // The cell of live token n.
  int32_t cell = 0, live = 0;
  while (cell < s.n_cells() && live < n) {
    if (s.cell_pos[sz(cell)] >= 0) ++live;
    ++cell;
  }
  // Sliding layers must still hold the window before the cut; else start over.
  if (n != 0 && !frames_needed_present(s, cell)) return truncate(seq, 0);
  const auto keep_blocks = sz(ceil_div(cell, B));
  for (size_t i = keep_blocks; i < s.table.size(); ++i) {
    if (s.table[i] >= 0) drop_block_ref(s.table[i]);
  }
  s.table.resize(keep_blocks);
  s.cell_pos.resize(sz(cell));
  s.tokens.resize(sz(n));
  if (restore_from >= 0 && n != 0) {
    restore_snapshot(s, restore_from);
  } else if (n == 0) {
    for (auto& st : s.state) std::fill(st.begin(), st.end(), uint8_t{0});
  }
  return n;
}

void KvManager::restore_snapshot(Sequence& s, int32_t b) {
  const std::vector<uint8_t>& snap = impl_->blocks[sz(b)].snap;
  size_t off = 0;
  for (auto& st : s.state) {
    if (st.empty()) continue;
    std::copy_n(snap.begin() + static_cast<std::ptrdiff_t>(off), st.size(), st.begin());
    off += st.size();
  }
}

int32_t KvManager::reuse_prefix(SeqId seq, std::span<const int32_t> prompt) {
  Sequence& s = seq_ref(seq);
  Impl& im = *impl_;
  size_t p = 0;
  while (p < s.tokens.size() && p < prompt.size() && s.tokens[p] == prompt[p]) ++p;
  // At least the last two prompt tokens run again (the last gives the logits; two keep the step
  // a multi-row one, computed bit for bit like a full prefill of the prompt).
  p = std::min(p, prompt.size() >= 2 ? prompt.size() - 2 : size_t{0});
  int32_t kept = truncate(seq, static_cast<int32_t>(p));
  if (kept > 0 || !spec_.prefix_cache || prompt.size() < 3) return kept;
  // Empty sequence: attach the longest run of cached blocks that starts the prompt.
  const int32_t B = spec_.block_size;
  std::vector<int32_t> found;
  uint64_t h = 0;
  for (size_t off = 0; off + sz(B) <= prompt.size(); off += sz(B)) {
    const auto toks = prompt.subspan(off, sz(B));
    h = chain_hash(h, toks);
    auto it = im.prefix.find(h);
    if (it == im.prefix.end()) break;
    const Block& blk = im.blocks[sz(it->second)];
    if (!blk.live || !blk.hashed || !std::equal(toks.begin(), toks.end(), blk.tokens.begin()))
      break;
    found.push_back(it->second);
  }
  const bool state = snapshot_bytes_ > 0;
  while (!found.empty()) {
    // Recurrent state: the attached run must end at a whole block with a snapshot (the states
    // after its last token) and still leave two tokens to evaluate.
    if (state &&
        (found.size() * sz(B) > prompt.size() - 2 || im.blocks[sz(found.back())].snap.empty())) {
      found.pop_back();
      continue;
    }
    const auto n = static_cast<int32_t>(
        std::min(found.size() * sz(B), prompt.size() - 2));  // two tokens left to evaluate
    s.table = found;
    s.cell_pos.resize(sz(n));
    for (int32_t c = 0; c < n; ++c) s.cell_pos[sz(c)] = c;
    if (frames_needed_present(s, n)) {
      for (int32_t b : found) {
        ++im.blocks[sz(b)].refs;
        im.blocks[sz(b)].last_use = ++im.clock;
      }
      const auto keep_blocks = sz(ceil_div(n, B));
      for (size_t i = keep_blocks; i < found.size(); ++i) --im.blocks[sz(found[i])].refs;
      s.table.resize(keep_blocks);
      s.tokens.assign(prompt.begin(), prompt.begin() + n);
      if (state) restore_snapshot(s, s.table.back());
      im.prefix_hits += n;
      return n;
    }
    found.pop_back();
  }
  s.table.clear();
  s.cell_pos.clear();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Steps

Status KvManager::begin_step(SeqId seq, std::span<const int32_t> tokens) {
  Sequence& s = seq_ref(seq);
  if (!s.open) return invalid_argument("KV cache: sequence " + std::to_string(seq) + " is closed");
  if (s.in_step) return internal_error("KV cache: begin_step while a step is pending");
  if (tokens.empty()) return invalid_argument("KV cache: a step needs tokens");
  const auto n = static_cast<int64_t>(tokens.size());
  if (static_cast<int64_t>(s.tokens.size()) + n > spec_.n_ctx) {
    return out_of_range("context is full: " + std::to_string(s.tokens.size()) + " cached + " +
                        std::to_string(n) + " new tokens exceed the context size " +
                        std::to_string(spec_.n_ctx));
  }
  const int32_t B = spec_.block_size;
  s.step_first_cell = s.n_cells();
  s.step_table_size = s.table.size();
  s.step_tokens = s.tokens.size();
  const int64_t last_cell = s.step_first_cell + n - 1;
  Status st;
  // The partially filled last block (if any) becomes ours alone.
  if (s.step_first_cell % B != 0) {
    const size_t ti = sz(s.step_first_cell / B);
    st = s.table[ti] >= 0 ? make_exclusive(s, ti) : internal_error("KV: writing a dropped block");
    // Its last cells are rewritten: a snapshot of its end no longer holds (a step that reaches
    // the end takes a new one).
    if (st.ok()) impl_->blocks[sz(s.table[ti])].snap.clear();
  }
  while (st.ok() && static_cast<int64_t>(s.table.size()) * B <= last_cell) {
    auto b = new_block();
    if (!b.ok()) {
      st = b.status();
      break;
    }
    s.table.push_back(*b);
  }
  if (!st.ok()) {
    for (size_t i = s.step_table_size; i < s.table.size(); ++i) drop_block_ref(s.table[i]);
    s.table.resize(s.step_table_size);
    return st;
  }
  const int32_t p0 = next_pos(seq);
  s.step_pos.resize(sz(n));
  for (int64_t i = 0; i < n; ++i) {
    s.step_pos[sz(i)] = p0 + static_cast<int32_t>(i);
    s.cell_pos.push_back(p0 + static_cast<int32_t>(i));
  }
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
  s.in_step = true;
  return {};
}

std::span<const int32_t> KvManager::step_positions(SeqId seq) const {
  return seq_ref(seq).step_pos;
}

Status KvManager::layer_view(SeqId seq, int il, KvLayerView& view) {
  Sequence& s = seq_ref(seq);
  if (!s.in_step) return internal_error("KV cache: layer_view outside a step");
  if (layer_store_[sz(il)] < 0) return internal_error("KV cache: layer has no K/V");
  KvStore& st = *stores_[sz(layer_store_[sz(il)])];
  // Frames of other layers of this sequence may be evicted again.
  std::erase_if(s.pins, [&](const std::pair<int, int32_t>& p) {
    if (p.first == il) return false;
    stores_[sz(layer_store_[sz(p.first)])]->unpin(p.second);
    return true;
  });
  const int32_t B = spec_.block_size;
  view.rows.clear();
  view.pos.clear();
  view.slots.clear();
  for (size_t ti = 0; ti < s.table.size(); ++ti) {
    const int32_t b = s.table[ti];
    if (b < 0) continue;
    const int32_t h = impl_->blocks[sz(b)].handle[sz(il)];
    if (h < 0) continue;  // left the sliding window
    GENIEX_TRY(st.make_resident(h));
    st.pin(h);
    s.pins.emplace_back(il, h);
    const int32_t row0 = st.frame(h) * B;
    const int32_t c0 = static_cast<int32_t>(ti) * B;
    const int32_t c1 = std::min(c0 + B, s.n_cells());
    for (int32_t c = c0; c < c1; ++c) {
      view.rows.push_back(row0 + (c - c0));
      view.pos.push_back(s.cell_pos[sz(c)]);
      if (c >= s.step_first_cell) view.slots.push_back(row0 + (c - c0));
    }
  }
  if (view.slots.size() != s.step_pos.size()) {
    return internal_error("KV cache: a new token's block has no frame in layer " +
                          std::to_string(il));
  }
  return {};
}

int32_t KvManager::layer_view_size(SeqId seq, int il) const {
  const Sequence& s = seq_ref(seq);
  const int32_t B = spec_.block_size;
  int32_t n = 0;
  for (size_t ti = 0; ti < s.table.size(); ++ti) {
    const int32_t b = s.table[ti];
    if (b < 0 || impl_->blocks[sz(b)].handle[sz(il)] < 0) continue;
    n += std::min(B, s.n_cells() - static_cast<int32_t>(ti) * B);
  }
  return n;
}

bool KvManager::spills() const {
  for (const auto& st : stores_) {
    if (st->spills()) return true;
  }
  return false;
}

void KvManager::end_step(SeqId seq, bool ok) {
  Sequence& s = seq_ref(seq);
  if (!s.in_step) return;
  for (const auto& [il, h] : s.pins) stores_[sz(layer_store_[sz(il)])]->unpin(h);
  s.pins.clear();
  s.in_step = false;
  if (!ok) {
    for (size_t i = s.step_table_size; i < s.table.size(); ++i) {
      if (s.table[i] >= 0) drop_block_ref(s.table[i]);
    }
    s.table.resize(s.step_table_size);
    s.cell_pos.resize(sz(s.step_first_cell));
    s.tokens.resize(s.step_tokens);
    s.step_pos.clear();
    return;
  }
  s.step_pos.clear();
  trim_sliding(s);
  register_full_blocks(s);
}

void KvManager::trim_sliding(Sequence& s) {
  const int32_t B = spec_.block_size;
  const auto next = static_cast<int32_t>(s.tokens.size());
  for (size_t ti = 0; ti + 1 < s.table.size(); ++ti) {  // never the last (growing) block
    const int32_t b = s.table[ti];
    if (b < 0) continue;
    Block& blk = impl_->blocks[sz(b)];
    if (blk.refs != 1) continue;  // others may still need it
    int32_t max_pos = -1;
    const int32_t c0 = static_cast<int32_t>(ti) * B;
    for (int32_t c = c0; c < c0 + B; ++c) max_pos = std::max(max_pos, s.cell_pos[sz(c)]);
    for (size_t il = 0; il < spec_.layers.size(); ++il) {
      const int32_t w = spec_.layers[il].sliding_window;
      if (w <= 0 || blk.handle[il] < 0) continue;
      // No query from `next - rewind_margin` on sees any of its keys.
      if (max_pos <= next - w - spec_.rewind_margin) {
        stores_[sz(layer_store_[il])]->release(blk.handle[il]);
        blk.handle[il] = -1;
      }
    }
  }
}

void KvManager::register_full_blocks(Sequence& s) {
  if (!spec_.prefix_cache) return;
  Impl& im = *impl_;
  const int32_t B = spec_.block_size;
  uint64_t h = 0;
  for (size_t ti = 0; ti < s.table.size(); ++ti) {
    const int32_t c0 = static_cast<int32_t>(ti) * B;
    if (c0 + B > s.n_cells()) return;  // partial
    const int32_t b = s.table[ti];
    if (b < 0 || s.cell_pos[sz(c0 + B - 1)] != c0 + B - 1 || s.cell_pos[sz(c0)] != c0) return;
    Block& blk = im.blocks[sz(b)];
    const auto toks = std::span<const int32_t>(s.tokens).subspan(sz(c0), sz(B));
    h = chain_hash(h, toks);
    if (blk.hashed) continue;
    if (auto it = im.prefix.find(h); it != im.prefix.end()) {  // another copy is cached already
      Block& other = im.blocks[sz(it->second)];
      if (other.snap.empty() && !blk.snap.empty()) other.snap = blk.snap;  // same tokens before
      continue;
    }
    blk.hashed = true;
    blk.hash = h;
    blk.tokens.assign(toks.begin(), toks.end());
    im.prefix.emplace(h, b);
  }
}

// ---------------------------------------------------------------------------------------------
// Shift, state

Status KvManager::shift(SeqId seq, int32_t n_keep, int32_t n_discard, const KvRotateFn& rotate) {
  Sequence& s = seq_ref(seq);
  const auto n_live = static_cast<int32_t>(s.tokens.size());
  if (s.in_step) return internal_error("KV cache: shift during a step");
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > n_live) {
    return invalid_argument("KV shift: keep " + std::to_string(n_keep) + " + discard " +
                            std::to_string(n_discard) + " exceeds " + std::to_string(n_live) +
                            " cached tokens");
  }
  const int32_t B = spec_.block_size;
  // Blocks whose cells change become exclusive first.
  int32_t first_changed = -1;
  for (int32_t c = 0; c < s.n_cells(); ++c) {
    if (s.cell_pos[sz(c)] >= n_keep) {
      first_changed = c;
      break;
    }
  }
  if (first_changed < 0) return {};
  for (size_t ti = sz(first_changed / B); ti < s.table.size(); ++ti) {
    if (s.table[ti] < 0) continue;
    GENIEX_TRY(make_exclusive(s, ti));
    impl_->blocks[sz(s.table[ti])].snap.clear();  // its tokens move: the states no longer apply
  }
  for (int32_t c = first_changed; c < s.n_cells(); ++c) {
    int32_t& p = s.cell_pos[sz(c)];
    if (p < 0) continue;
    p = p < n_keep + n_discard ? -1 : p - n_discard;
  }
  // Rotate the surviving moved rows, block by block, layer by layer.
  for (size_t ti = sz(first_changed / B); ti < s.table.size(); ++ti) {
    const int32_t b = s.table[ti];
    if (b < 0) continue;
    const int32_t c0 = static_cast<int32_t>(ti) * B;
    const int32_t c1 = std::min(c0 + B, s.n_cells());
    bool any_live = false;
    for (int32_t c = c0; c < c1; ++c) any_live |= s.cell_pos[sz(c)] >= 0;
    if (!any_live && ti + 1 < s.table.size()) {  // every cell dropped: free the block
      drop_block_ref(b);
      s.table[ti] = -1;
      continue;
    }
    for (size_t il = 0; il < spec_.layers.size(); ++il) {
      const int32_t h = impl_->blocks[sz(b)].handle[il];
      if (h < 0) continue;
      KvStore& st = *stores_[sz(layer_store_[il])];
      GENIEX_TRY(st.make_resident(h));
      // Runs of moved live cells (cells >= first_changed with a position >= n_keep).
      int32_t c = std::max(c0, first_changed);
      while (c < c1) {
        if (s.cell_pos[sz(c)] < n_keep) {
          ++c;
          continue;
        }
        int32_t e = c;
        while (e < c1 && s.cell_pos[sz(e)] >= n_keep) ++e;
        GENIEX_TRY(rotate(static_cast<int>(il), st.k_rows(h) + sz(c - c0) * st.k_row_bytes(), e - c,
                          -n_discard));
        c = e;
      }
    }
  }
  s.tokens.erase(s.tokens.begin() + n_keep, s.tokens.begin() + n_keep + n_discard);
  return {};
}

std::span<uint8_t> KvManager::layer_state(SeqId seq, int il) { return seq_ref(seq).state[sz(il)]; }

void KvManager::snapshot_points(SeqId seq, std::vector<int32_t>& out) const {
  out.clear();
  const Sequence& s = seq_ref(seq);
  if (snapshot_bytes_ == 0 || !s.in_step) return;
  const int32_t B = spec_.block_size;
  for (int32_t c = s.step_first_cell; c < s.n_cells(); ++c) {
    if ((c + 1) % B == 0 && s.cell_pos[sz(c)] == c) out.push_back(c - s.step_first_cell);
  }
}

Status KvManager::set_snapshot(SeqId seq, int32_t k, std::span<const uint8_t> states) {
  Sequence& s = seq_ref(seq);
  const int32_t B = spec_.block_size;
  const int64_t c = int64_t{s.step_first_cell} + k;
  if (!s.in_step || k < 0 || c >= s.n_cells() || (c + 1) % B != 0 || s.cell_pos[sz(c)] != c ||
      static_cast<int64_t>(states.size()) != snapshot_bytes_ || snapshot_bytes_ == 0) {
    return invalid_argument("KV cache: no snapshot of " + std::to_string(states.size()) +
                            " bytes is wanted after step token " + std::to_string(k));
  }
  const int32_t b = s.table[sz(c / B)];
  if (b < 0) return internal_error("KV cache: a snapshot for a dropped block");
  impl_->blocks[sz(b)].snap.assign(states.begin(), states.end());
  return {};
}

KvManagerStats KvManager::stats() const {
  KvManagerStats st;
  for (const Block& b : impl_->blocks) {
    if (!b.live) continue;
    if (b.refs > 0) {
      ++st.blocks_in_use;
    } else {
      ++st.blocks_cached;
    }
    if (!b.snap.empty()) {
      ++st.snapshots;
      st.snapshot_bytes += static_cast<int64_t>(b.snap.size());
    }
  }
  for (const auto& store : stores_) {
    const KvStoreStats ss = store->stats();
    st.frames += ss.handles;
    st.frames_resident += ss.resident;
    st.frames_spilled += ss.spilled;
    st.bytes_resident += ss.resident * static_cast<int64_t>(store->frame_bytes());
    st.bytes_touched += ss.frames_touched * static_cast<int64_t>(store->frame_bytes());
    st.spill_writes += ss.spill_writes;
    st.spill_reads += ss.spill_reads;
  }
  st.prefix_hits = impl_->prefix_hits;
  for (const Sequence& s : impl_->seqs) st.sequences += s.open ? 1 : 0;
  return st;
}

}  // namespace geniex::runtime
