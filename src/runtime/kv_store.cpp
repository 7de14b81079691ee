// KvStore: physical KV frames, handles, and spilling to an unlinked file.
#include "runtime/kv_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace geniex::runtime {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

// Anonymous, lazily backed memory: pages cost nothing until written.
uint8_t* reserve(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

Status spill_io_error(const char* what, int err) {
  return io_error(std::string("KV spill file: ") + what + " failed: " + std::strerror(err));
}

Status write_all(int fd, const uint8_t* p, size_t n, off_t off) {
  while (n > 0) {
    const ssize_t w = pwrite(fd, p, n, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return spill_io_error("write", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += w;
  }
  return {};
}

Status read_all(int fd, uint8_t* p, size_t n, off_t off) {
  while (n > 0) {
    const ssize_t r = pread(fd, p, n, off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return spill_io_error("read", errno);
    }
    if (r == 0) return io_error("KV spill file: short read");
    p += r;
    n -= static_cast<size_t>(r);
    off += r;
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<KvStore>> KvStore::create(const KvStoreSpec& spec) {
  switch (spec.type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0: break;
    default:
      return invalid_argument("KV cache type " + std::string(ggml_type_name(spec.type)) +
                              " is not supported (f32, f16, q8_0, q4_0)");
  }
  if (spec.block_size < 1 || spec.n_frames < 1 || spec.k_row_elems < 1 || spec.v_row_elems < 1) {
    return invalid_argument("KV store: block size, frames and row sizes must be positive");
  }
  const auto kb = ggml_row_bytes(spec.type, static_cast<uint64_t>(spec.k_row_elems));
  const auto vb = ggml_row_bytes(spec.type, static_cast<uint64_t>(spec.v_row_elems));
  if (!kb || !vb) {
    return invalid_argument("KV cache type " + std::string(ggml_type_name(spec.type)) +
                            " needs rows that are whole blocks (K row " +
                            std::to_string(spec.k_row_elems) + ", V row " +
                            std::to_string(spec.v_row_elems) + " elements)");
  }
  std::unique_ptr<KvStore> s(new KvStore(spec));
  s->k_row_bytes_ = *kb;
  s->v_row_bytes_ = *vb;
  const size_t rows = sz(spec.n_frames) * sz(spec.block_size);
  s->k_bytes_ = rows * *kb;
  s->v_bytes_ = rows * *vb;
  s->k_ = reserve(s->k_bytes_);
  s->v_ = reserve(s->v_bytes_);
  if (s->k_ == nullptr || s->v_ == nullptr) {
    return resource_exhausted("KV store: cannot reserve " +
                              std::to_string((s->k_bytes_ + s->v_bytes_) >> 20) + " MiB");
  }
  s->owner_.assign(sz(spec.n_frames), -1);
  if (!spec.spill_dir.empty()) {
    std::string tmpl = spec.spill_dir + "/geniex-kv-XXXXXX";
    s->fd_ = mkstemp(tmpl.data());
    if (s->fd_ < 0) {
      return io_error("KV spill: cannot create a file in '" + spec.spill_dir +
                      "': " + std::strerror(errno));
    }
    unlink(tmpl.c_str());  // lives as long as the descriptor
  }
  return s;
}

KvStore::~KvStore() {
  if (k_ != nullptr) munmap(k_, k_bytes_);
  if (v_ != nullptr) munmap(v_, v_bytes_);
  if (fd_ >= 0) close(fd_);
}

size_t KvStore::frame_bytes() const { return sz(spec_.block_size) * (k_row_bytes_ + v_row_bytes_); }
int64_t KvStore::n_rows() const { return int64_t{spec_.n_frames} * spec_.block_size; }
std::span<uint8_t> KvStore::k_buffer() const { return {k_, k_bytes_}; }
std::span<uint8_t> KvStore::v_buffer() const { return {v_, v_bytes_}; }

uint8_t* KvStore::k_rows(int32_t h) const {
  const int32_t f = recs_[sz(h)].frame;
  return k_ + sz(f) * sz(spec_.block_size) * k_row_bytes_;
}
uint8_t* KvStore::v_rows(int32_t h) const {
  const int32_t f = recs_[sz(h)].frame;
  return v_ + sz(f) * sz(spec_.block_size) * v_row_bytes_;
}

int64_t KvStore::available() const {
  const int64_t free_frames =
      static_cast<int64_t>(free_frames_.size()) + (spec_.n_frames - next_fresh_frame_);
  if (!spills()) return free_frames;
  int64_t evictable = 0;
  for (int32_t h : owner_) {
    if (h >= 0 && recs_[sz(h)].pins == 0) ++evictable;
  }
  return free_frames + evictable;
}

Status KvStore::spill(int32_t h) {
  Rec& r = recs_[sz(h)];
  if (r.file_slot < 0) {
    if (!free_slots_.empty()) {
      r.file_slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      r.file_slot = next_slot_++;
    }
  }
  const auto off = static_cast<off_t>(r.file_slot * static_cast<int64_t>(frame_bytes()));
  const size_t kn = sz(spec_.block_size) * k_row_bytes_;
  const size_t vn = sz(spec_.block_size) * v_row_bytes_;
  GENIEX_TRY(write_all(fd_, k_rows(h), kn, off));
  GENIEX_TRY(write_all(fd_, v_rows(h), vn, off + static_cast<off_t>(kn)));
  owner_[sz(r.frame)] = -1;
  free_frames_.push_back(r.frame);
  r.frame = -1;
  ++stats_.spill_writes;
  return {};
}

Result<int32_t> KvStore::take_frame() {
  if (!free_frames_.empty()) {
    const int32_t f = free_frames_.back();
    free_frames_.pop_back();
    return f;
  }
  if (next_fresh_frame_ < spec_.n_frames) {
    ++stats_.frames_touched;
    return next_fresh_frame_++;
  }
  if (!spills()) {
    return resource_exhausted("KV cache is full: all " + std::to_string(spec_.n_frames) +
                              " blocks of " + std::to_string(spec_.block_size) +
                              " tokens are in use (raise the context size or the KV budget)");
  }
  int32_t victim = -1;
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  for (int32_t h : owner_) {
    if (h >= 0 && recs_[sz(h)].pins == 0 && recs_[sz(h)].last_use < oldest) {
      oldest = recs_[sz(h)].last_use;
      victim = h;
    }
  }
  if (victim < 0) {
    return resource_exhausted(
        "KV budget too small: all " + std::to_string(spec_.n_frames) + " frames (" +
        std::to_string((int64_t{spec_.n_frames} * static_cast<int64_t>(frame_bytes())) >> 10) +
        " KiB) are needed at once by one layer of this step; raise --kv-budget");
  }
  GENIEX_TRY(spill(victim));
  const int32_t f = free_frames_.back();
  free_frames_.pop_back();
  return f;
}

Result<int32_t> KvStore::alloc() {
  GENIEX_ASSIGN_OR_RETURN(int32_t f, take_frame());
  int32_t h;
  if (!free_recs_.empty()) {
    h = free_recs_.back();
    free_recs_.pop_back();
  } else {
    h = static_cast<int32_t>(recs_.size());
    recs_.emplace_back();
  }
  Rec& r = recs_[sz(h)];
  r = Rec{};
  r.frame = f;
  r.live = true;
  r.last_use = ++clock_;
  owner_[sz(f)] = h;
  ++stats_.handles;
  return h;
}

void KvStore::release(int32_t h) {
  Rec& r = recs_[sz(h)];
  if (!r.live) return;
  if (r.frame >= 0) {
    owner_[sz(r.frame)] = -1;
    free_frames_.push_back(r.frame);
  }
  if (r.file_slot >= 0) free_slots_.push_back(r.file_slot);
  r = Rec{};
  free_recs_.push_back(h);
  --stats_.handles;
}

Status KvStore::make_resident(int32_t h) {
  Rec& r0 = recs_[sz(h)];
  r0.last_use = ++clock_;
  if (r0.frame >= 0) return {};
  ++r0.pins;  // not the victim of its own page-in
  auto f = take_frame();
  --recs_[sz(h)].pins;
  if (!f.ok()) return f.status();
  Rec& r = recs_[sz(h)];
  r.frame = *f;
  owner_[sz(*f)] = h;
  const auto off = static_cast<off_t>(r.file_slot * static_cast<int64_t>(frame_bytes()));
  const size_t kn = sz(spec_.block_size) * k_row_bytes_;
  const size_t vn = sz(spec_.block_size) * v_row_bytes_;
  GENIEX_TRY(read_all(fd_, k_rows(h), kn, off));
  GENIEX_TRY(read_all(fd_, v_rows(h), vn, off + static_cast<off_t>(kn)));
  ++stats_.spill_reads;
  return {};
}

void KvStore::pin(int32_t h) { ++recs_[sz(h)].pins; }
void KvStore::unpin(int32_t h) {
  if (recs_[sz(h)].pins > 0) --recs_[sz(h)].pins;
}

Status KvStore::copy(int32_t src, int32_t dst) {
  pin(dst);
  Status s = make_resident(src);
  pin(src);
  if (s.ok()) s = make_resident(dst);
  unpin(src);
  unpin(dst);
  GENIEX_TRY(s);
  std::memcpy(k_rows(dst), k_rows(src), sz(spec_.block_size) * k_row_bytes_);
  std::memcpy(v_rows(dst), v_rows(src), sz(spec_.block_size) * v_row_bytes_);
  return {};
}

KvStoreStats KvStore::stats() const {
  KvStoreStats s = stats_;
  s.resident = 0;
  for (int32_t h : owner_) s.resident += h >= 0 ? 1 : 0;
  s.spilled = s.handles - s.resident;
  return s;
}

}  // namespace geniex::runtime
