// The QNN HTP plugin's context-binary cache: after graphFinalize the plugin saves the context
// (QnnContext_getBinary) to <cache dir>/<key>.qnnctx, and a later compile of the same graph
// restores it with QnnContext_createFromBinary + QnnGraph_retrieve instead of preparing it again.
// The key hashes everything the prepared graph depends on: the graph description (tensors, ops,
// params, outputs, token count), the weights' bytes, the target (SoC, Hexagon arch), the runtime
// (core / backend API versions, build id) and this plugin's own file (any change to the lowering
// is a new plugin file, so stale entries are never matched). A file is trusted only when its
// magic, format version, key, sizes and checksum all agree; anything else is reported and
// rebuilt. Pure file work here; qnn_graph.cpp does the QNN calls.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/fnv1a.h"
#include "core/status.h"
#include "geniex/npu_plugin.h"

namespace geniex::npu_qnn {

/// What a cache entry holds besides the context binary: the QNN ids of the graph's execute-time
/// tensors, in the order the builder creates them (inputs, outputs, host inputs, host outputs).
struct CacheEntry {
  std::vector<uint32_t> tensor_ids;
  std::vector<uint8_t> binary;
};

/// 64-bit FNV-1a.
class Fnv {
 public:
  void bytes(const void* p, size_t n);
  template <typename T>
  void value(const T& v) {
    bytes(&v, sizeof(v));
  }
  void text(const std::string& s);
  [[nodiscard]] uint64_t digest() const { return h_; }

 private:
  uint64_t h_ = kFnv1aOffset;
};

/// The key of `desc` on a device whose target + runtime + plugin identity is `device_identity`.
uint64_t graph_key(const geniex_npu_graph& desc, const std::string& device_identity);

/// "<16 hex digits>".
std::string key_text(uint64_t key);

/// The cache folder: `configured` ("none" / "off": no cache), else $GENIEX_QNN_CACHE_DIR, else
/// $XDG_CACHE_HOME/geniex/qnn, else $HOME/.cache/geniex/qnn; empty when off or unknown.
std::filesystem::path cache_dir(const std::string& configured);

/// A hash of this plugin's own shared object (its bytes), so a rebuilt plugin never reads the
/// entries of another build; "" when it cannot be read.
std::string plugin_identity();

/// Reads and validates `file` for `key`: kNotFound when absent; kDataLoss naming the defect
/// (truncated, bad magic / version, another key, checksum mismatch) when present but not usable.
Result<CacheEntry> read_entry(const std::filesystem::path& file, uint64_t key);

/// Writes the entry atomically (a temporary file renamed over `file`). kIoError on failure.
Status write_entry(const std::filesystem::path& file, uint64_t key, const CacheEntry& e);

/// Marks `file` used now (its modification time), so pruning keeps it longest.
void touch_entry(const std::filesystem::path& file);

/// Removes the least recently used entries of `dir` (by modification time) until their total is
/// at most `max_bytes`, keeping `keep`; returns how many were removed.
int prune_entries(const std::filesystem::path& dir, uint64_t max_bytes,
                  const std::filesystem::path& keep);

}  // namespace geniex::npu_qnn
