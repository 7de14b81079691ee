#include "backends/npu/qnn/qnn_cache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace geniex::npu_qnn {
namespace {

constexpr char kMagic[8] = {'G', 'X', 'Q', 'N', 'N', 'C', 'T', 'X'};
constexpr uint32_t kFormat = 1;

// magic, format, n_ids, key, binary size, checksum; then the ids, then the binary.
struct Header {
  char magic[8];
  uint32_t format;
  uint32_t n_ids;
  uint64_t key;
  uint64_t binary_size;
  uint64_t checksum;
};
static_assert(sizeof(Header) == 40);

uint64_t checksum(const CacheEntry& e) {
  Fnv f;
  f.bytes(e.tensor_ids.data(), e.tensor_ids.size() * 4);
  f.bytes(e.binary.data(), e.binary.size());
  return f.digest();
}

}  // namespace

void Fnv::bytes(const void* p, size_t n) { h_ = fnv1a(p, n, h_); }

void Fnv::text(const std::string& s) {
  value(static_cast<uint64_t>(s.size()));
  bytes(s.data(), s.size());
}

uint64_t graph_key(const geniex_npu_graph& desc, const std::string& device_identity) {
  Fnv f;
  f.text("geniex-qnn-graph-v1");
  f.text(device_identity);
  f.value(desc.batch_tokens);
  f.value(desc.n_tensors);
  for (uint32_t i = 0; i < desc.n_tensors; ++i) {
    const geniex_npu_tensor& t = desc.tensors[i];
    f.value(t.id);
    f.value(t.dtype);
    f.bytes(t.ne, sizeof(t.ne));
    f.value(t.role);
    if (t.role == GENIEX_NPU_TENSOR_WEIGHT && t.data != nullptr) {
      f.value(t.data_bytes);
      f.bytes(t.data, t.data_bytes);
    }
  }
  f.value(desc.n_ops);
  for (uint32_t i = 0; i < desc.n_ops; ++i) {
    const geniex_npu_op& op = desc.ops[i];
    f.value(op.kind);
    f.value(op.output);
    f.value(op.n_inputs);
    f.bytes(op.inputs, sizeof(uint32_t) * op.n_inputs);
    const geniex_npu_op_params& p = op.params;  // field by field: no padding bytes
    f.value(p.eps);
    f.value(p.scale);
    f.value(p.rope_mode);
    f.value(p.rope_n_dims);
    f.value(p.rope_base);
    f.value(p.rope_freq_scale);
    f.value(p.attn_scale);
    f.value(p.attn_causal);
    f.value(p.attn_sliding_window);
    f.value(p.attn_softcap);
    f.value(p.glu);
    f.bytes(p.ne, sizeof(p.ne));
  }
  f.value(desc.n_outputs);
  f.bytes(desc.outputs, sizeof(uint32_t) * desc.n_outputs);
  return f.digest();
}

std::string key_text(uint64_t key) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(key));
  return buf;
}

std::filesystem::path cache_dir(const std::string& configured) {
  if (configured == "none" || configured == "off") return {};
  if (!configured.empty()) return configured;
  if (const char* e = std::getenv("GENIEX_QNN_CACHE_DIR"); e != nullptr && *e != '\0') {
    const std::string v = e;
    if (v == "none" || v == "off") return {};
    return v;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return std::filesystem::path(x) / "geniex" / "qnn";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::filesystem::path(h) / ".cache" / "geniex" / "qnn";
  }
  return {};
}

std::string plugin_identity() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&plugin_identity), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::ifstream in(info.dli_fname, std::ios::binary);
  if (!in) return {};
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  Fnv f;
  f.bytes(bytes.data(), bytes.size());
  return key_text(f.digest()) + ":" + std::to_string(bytes.size());
}

Result<CacheEntry> read_entry(const std::filesystem::path& file, uint64_t key) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return not_found("no cache entry " + file.string());
  }
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  Header h{};
  if (bytes.size() < sizeof(h)) return data_loss("truncated (no header)");
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return data_loss("not a GenieX entry");
  if (h.format != kFormat) return data_loss("format " + std::to_string(h.format));
  if (h.key != key) return data_loss("entry of another graph (key " + key_text(h.key) + ")");
  const uint64_t need = sizeof(h) + uint64_t{h.n_ids} * 4 + h.binary_size;
  if (bytes.size() != need) {
    return data_loss("truncated or padded: " + std::to_string(bytes.size()) +
                     " bytes, header says " + std::to_string(need));
  }
  CacheEntry e;
  e.tensor_ids.resize(h.n_ids);
  std::memcpy(e.tensor_ids.data(), bytes.data() + sizeof(h), size_t{h.n_ids} * 4);
  e.binary.assign(bytes.begin() + static_cast<long>(sizeof(h) + size_t{h.n_ids} * 4), bytes.end());
  if (checksum(e) != h.checksum) return data_loss("checksum mismatch");
  return e;
}

Status write_entry(const std::filesystem::path& file, uint64_t key, const CacheEntry& e) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return io_error("cannot create " + file.parent_path().string() + ": " + ec.message());
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.format = kFormat;
  h.n_ids = static_cast<uint32_t>(e.tensor_ids.size());
  h.key = key;
  h.binary_size = e.binary.size();
  h.checksum = checksum(e);
  const auto tmp = file.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h), sizeof(h));
    out.write(reinterpret_cast<const char*>(e.tensor_ids.data()),
              static_cast<std::streamsize>(e.tensor_ids.size() * 4));
    out.write(reinterpret_cast<const char*>(e.binary.data()),
              static_cast<std::streamsize>(e.binary.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return io_error("cannot write " + tmp);
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return io_error("cannot rename into " + file.string());
  }
  return {};
}

void touch_entry(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now(), ec);
}

int prune_entries(const std::filesystem::path& dir, uint64_t max_bytes,
                  const std::filesystem::path& keep) {
  namespace fs = std::filesystem;
  struct Item {
    fs::file_time_type when;
    uint64_t bytes;
    fs::path path;
  };
  std::vector<Item> items;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".qnnctx") continue;
    std::error_code e2;
    const uint64_t size = it->file_size(e2);
    const auto when = it->last_write_time(e2);
    if (e2) continue;
    items.push_back({when, size, it->path()});
    total += size;
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.when < b.when; });
  int removed = 0;
  for (const Item& i : items) {
    if (total <= max_bytes) break;
    if (i.path == keep) continue;
    std::error_code e3;
    if (fs::remove(i.path, e3)) {
      total -= i.bytes;
      ++removed;
    }
  }
  return removed;
}

}  // namespace geniex::npu_qnn
