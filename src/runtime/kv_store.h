// KvStore: the physical memory of the paged KV cache for one row-size class of layers.
//
// Memory is a fixed number of physical frames; a frame holds `block_size` consecutive K rows
// and the same V rows of ONE layer (a layer's K buffer is rows [frame * block_size, ...)). The
// buffers are reserved up front but only touched as frames are written, so resident memory
// grows with the tokens actually cached.
//
// Frames are reached through handles. A handle is resident (it owns a physical frame) or, when
// a spill directory is configured and every frame is taken, spilled: its bytes were written to
// the spill file so that the frame could serve another handle; make_resident() reads them back
// (evicting the least recently used unpinned handle). Pinned handles are never evicted.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace geniex::runtime {

struct KvStoreSpec {
  GgmlType type = GgmlType::kF16;  ///< F32, F16, Q8_0 or Q4_0
  int32_t block_size = 32;         ///< token rows per frame
  int64_t k_row_elems = 0;         ///< head_dim_k * n_kv_head
  int64_t v_row_elems = 0;         ///< head_dim_v * n_kv_head
  int32_t n_frames = 0;            ///< physical frames
  /// Empty: no spilling (allocation fails when the frames run out). Else a directory where an
  /// unlinked spill file is created.
  std::string spill_dir;
};

struct KvStoreStats {
  int64_t handles = 0;         ///< live handles
  int64_t resident = 0;        ///< handles holding a frame
  int64_t spilled = 0;         ///< handles whose bytes are only in the spill file
  int64_t frames_touched = 0;  ///< frames ever used (their pages are resident memory)
  int64_t spill_writes = 0;    ///< frames written to the spill file
  int64_t spill_reads = 0;     ///< frames read back
};

class KvStore {
 public:
  /// kInvalidArgument for a bad spec (type, sizes not whole blocks of the type),
  /// kResourceExhausted when the memory cannot be reserved, kIoError for a spill file that
  /// cannot be created.
  static Result<std::unique_ptr<KvStore>> create(const KvStoreSpec& spec);
  ~KvStore();
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  [[nodiscard]] const KvStoreSpec& spec() const { return spec_; }
  [[nodiscard]] size_t k_row_bytes() const { return k_row_bytes_; }
  [[nodiscard]] size_t v_row_bytes() const { return v_row_bytes_; }
  /// Bytes of one frame (K and V rows).
  [[nodiscard]] size_t frame_bytes() const;
  /// Rows of the K and V buffers (n_frames * block_size): the `S` of the state nodes.
  [[nodiscard]] int64_t n_rows() const;
  [[nodiscard]] bool spills() const { return fd_ >= 0; }

  /// The whole K / V buffers, for binding as graph state.
  [[nodiscard]] std::span<uint8_t> k_buffer() const;
  [[nodiscard]] std::span<uint8_t> v_buffer() const;

  /// A new resident handle (a frame, evicting an unpinned handle to the spill file if needed).
  /// kResourceExhausted when no frame can be had.
  Result<int32_t> alloc();
  /// Frees the handle (its frame or spill slot).
  void release(int32_t h);
  /// Makes the handle resident (reading it back if spilled) and marks it recently used.
  Status make_resident(int32_t h);
  void pin(int32_t h);
  void unpin(int32_t h);
  /// The physical frame of a resident handle (-1 if spilled).
  [[nodiscard]] int32_t frame(int32_t h) const { return recs_[static_cast<size_t>(h)].frame; }
  /// Copies src's rows into dst (both made resident).
  Status copy(int32_t src, int32_t dst);
  /// The frame's K / V rows (resident handles only).
  [[nodiscard]] uint8_t* k_rows(int32_t h) const;
  [[nodiscard]] uint8_t* v_rows(int32_t h) const;
  /// Frames that can be obtained without failing (free, or evictable by spilling).
  [[nodiscard]] int64_t available() const;
  [[nodiscard]] KvStoreStats stats() const;

 private:
  explicit KvStore(KvStoreSpec spec) : spec_(std::move(spec)) {}
  struct Rec {
    int32_t frame = -1;      ///< physical frame, -1 when spilled
    int64_t file_slot = -1;  ///< slot in the spill file, -1 when none
    uint64_t last_use = 0;
    int32_t pins = 0;
    bool live = false;
  };
  Result<int32_t> take_frame();
  Status spill(int32_t h);

  KvStoreSpec spec_;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
  size_t k_bytes_ = 0, v_bytes_ = 0;
  std::vector<Rec> recs_;
  std::vector<int32_t> free_recs_;
  std::vector<int32_t> free_frames_;
  std::vector<int32_t> owner_;  ///< per frame: the handle holding it, -1 if free
  int32_t next_fresh_frame_ = 0;
  std::vector<int64_t> free_slots_;
  int64_t next_slot_ = 0;
  uint64_t clock_ = 0;
  int fd_ = -1;
  KvStoreStats stats_;
};

}  // namespace geniex::runtime
