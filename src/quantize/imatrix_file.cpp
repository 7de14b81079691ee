#include "quantize/imatrix_file.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/gguf_reader.h"

namespace geniex::quantize {
namespace {

Status bad(const std::string& path, const std::string& why) {
  return invalid_argument("imatrix " + path + ": " + why);
}

Result<Imatrix> load_gguf(const std::string& path) {
  auto file = gguf::GgufFile::open(path);
  if (!file.ok()) return bad(path, file.status().message());
  Imatrix m;
  const bool has_meta = file->find("imatrix.datasets") != nullptr &&
                        file->find("imatrix.chunk_count") != nullptr &&
                        file->find("imatrix.chunk_size") != nullptr;
  if (!has_meta) return bad(path, "missing imatrix metadata (imatrix.datasets/chunk_count/size)");
  auto ds = file->get_string_array("imatrix.datasets");
  if (ds.ok()) m.datasets = *ds;
  GENIEX_ASSIGN_OR_RETURN(const uint64_t chunks, file->get_uint("imatrix.chunk_count"));
  m.chunk_count = static_cast<int>(chunks);
  std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> pairs;
  for (const auto& t : file->tensors()) {
    std::string name = t.name;
    if (name.ends_with(".in_sum2")) {
      pairs[name.substr(0, name.size() - 8)].first = &t;
    } else if (name.ends_with(".counts")) {
      pairs[name.substr(0, name.size() - 7)].second = &t;
    }
  }
  if (pairs.empty()) return bad(path, "no data");
  for (const auto& [name, p] : pairs) {
    if (p.first == nullptr || p.second == nullptr) {
      return bad(path, "mismatched sums and counts for " + name);
    }
    if (p.first->type != GgmlType::kF32 || p.second->type != GgmlType::kF32) {
      return bad(path, "sums and counts for " + name + " must be F32");
    }
    const uint64_t nval = p.first->n_elements();
    const uint64_t ncounts = p.second->n_elements();
    if (ncounts == 0 || nval == 0 || nval % ncounts != 0) {
      return bad(path, name + ": " + std::to_string(nval) + " sums do not split into " +
                           std::to_string(ncounts) + " counts");
    }
    std::vector<float> sums(nval);
    std::vector<float> counts(ncounts);
    std::memcpy(sums.data(), p.first->data.data(), nval * sizeof(float));
    std::memcpy(counts.data(), p.second->data.data(), ncounts * sizeof(float));
    const uint64_t ne0 = nval / ncounts;
    std::vector<float> e(nval);
    for (uint64_t j = 0; j < ncounts; ++j) {
      const auto count = static_cast<float>(std::lround(counts[j]));
      for (uint64_t i = 0; i < ne0; ++i) {
        e[j * ne0 + i] = count > 0.0f ? sums[j * ne0 + i] / count : 1.0f;
      }
    }
    m.entries.emplace(name, std::move(e));
  }
  return m;
}

class Cursor {
 public:
  explicit Cursor(std::vector<char> b) : b_(std::move(b)) {}
  bool i32(int32_t* v) { return take(v, sizeof(*v)); }
  bool take(void* dst, size_t n) {
    if (n > b_.size() - pos_) return false;
    std::memcpy(dst, b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  [[nodiscard]] bool at_end() const { return pos_ == b_.size(); }
  [[nodiscard]] size_t remaining() const { return b_.size() - pos_; }

 private:
  std::vector<char> b_;
  size_t pos_ = 0;
};

Result<Imatrix> load_legacy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad(path, "cannot open");
  Cursor c(std::vector<char>(std::istreambuf_iterator<char>(in), {}));
  Imatrix m;
  m.legacy = true;
  int32_t n_entries = 0;
  if (!c.i32(&n_entries) || n_entries < 1) return bad(path, "neither GGUF nor a legacy .dat file");
  for (int32_t k = 0; k < n_entries; ++k) {
    int32_t len = 0;
    if (!c.i32(&len) || len < 0 || len > (1 << 16)) return bad(path, "truncated entry name");
    std::string name(static_cast<size_t>(len), '\0');
    int32_t ncall = 0;
    int32_t nval = 0;
    if (!c.take(name.data(), name.size()) || !c.i32(&ncall) || !c.i32(&nval) || nval < 1 ||
        nval > (1 << 28)) {
      return bad(path, "truncated entry " + std::to_string(k + 1));
    }
    // Checked before allocating: a header must not make us reserve memory the file cannot fill.
    if (static_cast<size_t>(nval) * sizeof(float) > c.remaining()) {
      return bad(path, "truncated data for " + name);
    }
    std::vector<float> sums(static_cast<size_t>(nval));
    if (!c.take(sums.data(), sums.size() * sizeof(float))) {
      return bad(path, "truncated data for " + name);
    }
    if (ncall > 0) {
      for (float& v : sums) v = v / static_cast<float>(ncall);
    }
    m.entries[name] = std::move(sums);
  }
  int32_t n_calls = 0;
  if (!c.at_end() && c.i32(&n_calls)) {
    m.chunk_count = n_calls;
    int32_t len = 0;
    if (c.i32(&len) && len > 0 && len < (1 << 20)) {
      std::string ds(static_cast<size_t>(len), '\0');
      if (c.take(ds.data(), ds.size())) m.datasets.push_back(ds.c_str());
    }
  }
  return m;
}

}  // namespace

Result<Imatrix> load_imatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad(path, "cannot open");
  char magic[4] = {};
  in.read(magic, 4);
  in.close();
  Result<Imatrix> m = std::memcmp(magic, "GGUF", 4) == 0 ? load_gguf(path) : load_legacy(path);
  if (!m.ok()) return m;
  for (const auto& [name, v] : m->entries) {
    for (float f : v) {
      if (!std::isfinite(f)) return bad(path, "non-finite value in " + name);
    }
  }
  return m;
}

}  // namespace geniex::quantize
