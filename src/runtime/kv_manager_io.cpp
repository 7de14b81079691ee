// KvManager::save / load: a sequence's state in a versioned, checksummed file.
//
// Layout (little-endian): "GXKVSEQ\0" | u32 version | u32 reserved | str fingerprint |
// u32 type | u32 block_size | u32 n_layers | per layer {i64 k_row, i64 v_row, i32 window,
// i64 state_bytes} | u32 n_tokens | i32 tokens[] | u32 n_cells | i32 cell_pos[] |
// per layer, per block of the table: u8 present, then (present) the frame's K rows and V rows |
// per layer: state bytes | (version 2) per block of the table: u8 present, then (present) its
// recurrent-state snapshot (snapshot_bytes()) | u64 FNV-1a of everything before.
// A str is u32 length + bytes. With the snapshots a loaded state model resumes at any block end
// the saved sequence could (a prompt that diverges before the end keeps the blocks before it);
// version 1 files (no snapshots) still load, resuming only as the whole sequence.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "core/fnv1a.h"
#include "core/regular_file.h"
#include "runtime/kv_manager.h"
#include "runtime/kv_manager_internal.h"

namespace geniex::runtime {
namespace {

constexpr char kMagic[8] = {'G', 'X', 'K', 'V', 'S', 'E', 'Q', '\0'};
constexpr uint32_t kVersion = 2;
constexpr uint32_t kOldestVersion = 1;  // no snapshots

size_t sz(int64_t v) { return static_cast<size_t>(v); }

class Writer {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    buf.insert(buf.end(), p, p + sizeof(T));
  }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf.insert(buf.end(), b, b + n);
  }
  void str(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  std::vector<uint8_t> buf;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  bool get(T& v) {
    if (n_ - off_ < sizeof(T)) return false;
    std::memcpy(&v, p_ + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  const uint8_t* take(size_t n) {
    if (n_ - off_ < n) return nullptr;
    const uint8_t* r = p_ + off_;
    off_ += n;
    return r;
  }
  [[nodiscard]] bool done() const { return off_ == n_; }
  bool str(std::string& s) {
    uint32_t len = 0;
    if (!get(len)) return false;
    const uint8_t* b = take(len);
    if (b == nullptr) return false;
    s.assign(reinterpret_cast<const char*>(b), len);
    return true;
  }

 private:
  const uint8_t* p_;
  size_t n_, off_ = 0;
};

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};

}  // namespace

Status KvManager::save(SeqId seq, const std::string& path, const std::string& fingerprint) {
  Sequence& s = seq_ref(seq);
  if (!s.open || s.in_step) return invalid_argument("KV save: sequence is not open / idle");
  Writer w;
  w.bytes(kMagic, sizeof(kMagic));
  w.put(kVersion);
  w.put(uint32_t{0});
  w.str(fingerprint);
  w.put(static_cast<uint32_t>(spec_.type));
  w.put(static_cast<uint32_t>(spec_.block_size));
  w.put(static_cast<uint32_t>(spec_.layers.size()));
  for (const auto& l : spec_.layers) {
    w.put(l.k_row_elems);
    w.put(l.v_row_elems);
    w.put(l.sliding_window);
    w.put(l.state_bytes);
  }
  w.put(static_cast<uint32_t>(s.tokens.size()));
  w.bytes(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
  w.put(static_cast<uint32_t>(s.cell_pos.size()));
  w.bytes(s.cell_pos.data(), s.cell_pos.size() * sizeof(int32_t));
  const size_t B = sz(spec_.block_size);
  for (size_t il = 0; il < spec_.layers.size(); ++il) {
    if (layer_store_[il] < 0) continue;
    KvStore& st = *stores_[sz(layer_store_[il])];
    for (int32_t b : s.table) {
      const int32_t h = b >= 0 ? impl_->blocks[sz(b)].handle[il] : -1;
      w.put(static_cast<uint8_t>(h >= 0 ? 1 : 0));
      if (h < 0) continue;
      GENIEX_TRY(st.make_resident(h));
      w.bytes(st.k_rows(h), B * st.k_row_bytes());
      w.bytes(st.v_rows(h), B * st.v_row_bytes());
    }
  }
  for (const auto& state : s.state) w.bytes(state.data(), state.size());
  for (int32_t b : s.table) {
    const bool snap = b >= 0 && !impl_->blocks[sz(b)].snap.empty();
    w.put(static_cast<uint8_t>(snap ? 1 : 0));
    if (snap) w.bytes(impl_->blocks[sz(b)].snap.data(), impl_->blocks[sz(b)].snap.size());
  }
  w.put(fnv1a(w.buf.data(), w.buf.size()));

  // A new file or a regular one: opening a FIFO to write would wait for a reader, and a device
  // is no place for a state.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return invalid_argument("KV save: " + path + " is " + std::string(file_type_name(st.st_mode)) +
                            ", not a regular file");
  }
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) return io_error("KV save: cannot open '" + path + "' for writing");
  if (std::fwrite(w.buf.data(), 1, w.buf.size(), f.get()) != w.buf.size() ||
      std::fflush(f.get()) != 0) {
    return io_error("KV save: writing '" + path + "' failed");
  }
  return {};
}

uint64_t KvManager::max_file_bytes(const std::string& fingerprint) const {
  // What save() writes for the fullest sequence: n_ctx tokens, at most 2 n_ctx + 1 cells (the
  // bound load() enforces), every block of every layer present.
  const uint64_t n_ctx = static_cast<uint64_t>(spec_.n_ctx);
  const uint64_t cells = 2 * n_ctx + 1;
  const uint64_t block = static_cast<uint64_t>(spec_.block_size);
  const uint64_t blocks = (cells + block - 1) / block;
  uint64_t n = sizeof(kMagic) + 3 * sizeof(uint32_t) + fingerprint.size() + 3 * sizeof(uint32_t);
  n += spec_.layers.size() * (3 * sizeof(int64_t) + sizeof(int32_t));
  n += sizeof(uint32_t) + n_ctx * sizeof(int32_t) + sizeof(uint32_t) + cells * sizeof(int32_t);
  n += blocks * (1 + static_cast<uint64_t>(snapshot_bytes_));  // the blocks' snapshots
  for (size_t il = 0; il < spec_.layers.size(); ++il) {
    n += static_cast<uint64_t>(spec_.layers[il].state_bytes);
    if (layer_store_[il] < 0) continue;
    const KvStore& st = *stores_[sz(layer_store_[il])];
    n += blocks * (1 + block * (st.k_row_bytes() + st.v_row_bytes()));
  }
  return n + sizeof(uint64_t);
}

Status KvManager::load(SeqId seq, const std::string& path, const std::string& fingerprint) {
  Sequence& s = seq_ref(seq);
  if (!s.open || s.in_step) return invalid_argument("KV load: sequence is not open / idle");
  // Only a regular file (a FIFO or /dev/zero would hang or never end), and no bigger than a
  // state of this model can be: checked before anything is read.
  auto file = RegularFile::open(path);
  if (!file.ok()) return Status(file.status().code(), "KV load: " + file.status().message());
  auto text = file->read_all(max_file_bytes(fingerprint), "KV state file");
  if (!text.ok()) {
    return Status(text.status().code(), "KV load: " + text.status().message() +
                                            " (the most a state of this model "
                                            "and context size can take)");
  }
  const std::span<const uint8_t> buf(reinterpret_cast<const uint8_t*>(text->data()), text->size());
  const std::string where = "KV state file '" + path + "'";
  if (buf.size() < sizeof(kMagic) + 16 || std::memcmp(buf.data(), kMagic, sizeof(kMagic)) != 0) {
    return data_loss(where + " is not a GenieX KV state file");
  }
  uint64_t sum = 0;
  std::memcpy(&sum, buf.data() + buf.size() - sizeof(sum), sizeof(sum));
  if (fnv1a(buf.data(), buf.size() - sizeof(sum)) != sum) {
    return data_loss(where + " is corrupt or truncated (checksum mismatch)");
  }
  Reader r(buf.data() + sizeof(kMagic), buf.size() - sizeof(kMagic) - sizeof(sum));
  uint32_t version = 0, reserved = 0;
  std::string fp;
  if (!r.get(version) || !r.get(reserved) || !r.str(fp)) return data_loss(where + ": bad header");
  if (version < kOldestVersion || version > kVersion) {
    return invalid_argument(where + " has version " + std::to_string(version) + "; this build " +
                            "reads versions " + std::to_string(kOldestVersion) + " to " +
                            std::to_string(kVersion));
  }
  if (fp != fingerprint) {
    return invalid_argument(where + " was saved from another model or KV setup ('" + fp +
                            "'; this model is '" + fingerprint + "')");
  }
  uint32_t type = 0, block = 0, n_layers = 0;
  if (!r.get(type) || !r.get(block) || !r.get(n_layers)) return data_loss(where + ": bad header");
  if (type != static_cast<uint32_t>(spec_.type) ||
      block != static_cast<uint32_t>(spec_.block_size) || n_layers != spec_.layers.size()) {
    return invalid_argument(where + " has another KV type, block size or layer count");
  }
  for (const auto& l : spec_.layers) {
    KvLayerSpec fl;
    if (!r.get(fl.k_row_elems) || !r.get(fl.v_row_elems) || !r.get(fl.sliding_window) ||
        !r.get(fl.state_bytes)) {
      return data_loss(where + ": bad layer table");
    }
    if (fl.k_row_elems != l.k_row_elems || fl.v_row_elems != l.v_row_elems ||
        fl.sliding_window != l.sliding_window || fl.state_bytes != l.state_bytes) {
      return invalid_argument(where + " has another layer layout");
    }
  }
  uint32_t n_tok = 0, n_cells = 0;
  std::vector<int32_t> tokens, cell_pos;
  if (!r.get(n_tok) || n_tok > static_cast<uint32_t>(spec_.n_ctx)) {
    return invalid_argument(where + ": more tokens than the context size " +
                            std::to_string(spec_.n_ctx));
  }
  const uint8_t* tp = r.take(sz(n_tok) * sizeof(int32_t));
  if (tp == nullptr || !r.get(n_cells) || n_cells < n_tok || n_cells > 2u * spec_.n_ctx + 1) {
    return data_loss(where + ": bad token table");
  }
  tokens.resize(n_tok);
  if (!tokens.empty()) std::memcpy(tokens.data(), tp, tokens.size() * sizeof(int32_t));
  const uint8_t* cp = r.take(sz(n_cells) * sizeof(int32_t));
  if (cp == nullptr) return data_loss(where + ": bad cell table");
  cell_pos.resize(n_cells);
  if (!cell_pos.empty()) std::memcpy(cell_pos.data(), cp, cell_pos.size() * sizeof(int32_t));
  uint32_t n_live = 0;
  for (int32_t p : cell_pos) {
    if (p >= spec_.n_ctx) return data_loss(where + ": a position beyond the context");
    n_live += p >= 0 ? 1 : 0;
  }
  if (n_live != n_tok) return data_loss(where + ": cells and tokens disagree");

  // Rebuild: an empty sequence, fresh blocks, frames filled from the file.
  truncate(seq, 0);
  const size_t B = sz(spec_.block_size);
  const size_t n_blocks = (n_cells + B - 1) / B;
  auto fail = [&](Status st) {
    truncate(seq, 0);
    return st;
  };
  for (size_t i = 0; i < n_blocks; ++i) {
    auto b = new_block();
    if (!b.ok()) return fail(b.status());
    s.table.push_back(*b);
  }
  for (size_t il = 0; il < spec_.layers.size(); ++il) {
    if (layer_store_[il] < 0) continue;
    KvStore& st = *stores_[sz(layer_store_[il])];
    for (int32_t b : s.table) {
      uint8_t present = 0;
      if (!r.get(present)) return fail(data_loss(where + ": truncated frames"));
      int32_t& h = impl_->blocks[sz(b)].handle[il];
      if (present == 0) {
        st.release(h);
        h = -1;
        continue;
      }
      const uint8_t* kp = r.take(B * st.k_row_bytes());
      const uint8_t* vp = r.take(B * st.v_row_bytes());
      if (kp == nullptr || vp == nullptr) return fail(data_loss(where + ": truncated frames"));
      Status rs = st.make_resident(h);
      if (!rs.ok()) return fail(rs);
      std::memcpy(st.k_rows(h), kp, B * st.k_row_bytes());
      std::memcpy(st.v_rows(h), vp, B * st.v_row_bytes());
    }
  }
  for (auto& state : s.state) {
    if (state.empty()) continue;
    const uint8_t* p = r.take(state.size());
    if (p == nullptr) return fail(data_loss(where + ": truncated state"));
    std::memcpy(state.data(), p, state.size());
  }
  if (version >= 2) {
    for (int32_t b : s.table) {
      uint8_t present = 0;
      if (!r.get(present) || present > 1) return fail(data_loss(where + ": bad snapshot table"));
      if (present == 0) continue;
      if (snapshot_bytes_ == 0)
        return fail(data_loss(where + ": a snapshot for a stateless model"));
      const uint8_t* p = r.take(sz(snapshot_bytes_));
      if (p == nullptr) return fail(data_loss(where + ": truncated snapshots"));
      impl_->blocks[sz(b)].snap.assign(p, p + snapshot_bytes_);
    }
  }
  if (!r.done()) return fail(data_loss(where + ": trailing bytes"));
  s.tokens = std::move(tokens);
  s.cell_pos = std::move(cell_pos);
  register_full_blocks(s);
  return {};
}

}  // namespace geniex::runtime
