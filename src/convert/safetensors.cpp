#include "convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "convert/json_file.h"

namespace geniex::convert {
namespace {

using nlohmann::json;

struct DTypeEntry {
  StDType type;
  std::string_view name;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {StDType::kBool, "BOOL", 1}, {StDType::kU8, "U8", 1},          {StDType::kI8, "I8", 1},
    {StDType::kI16, "I16", 2},   {StDType::kU16, "U16", 2},        {StDType::kI32, "I32", 4},
    {StDType::kU32, "U32", 4},   {StDType::kI64, "I64", 8},        {StDType::kU64, "U64", 8},
    {StDType::kF16, "F16", 2},   {StDType::kBF16, "BF16", 2},      {StDType::kF32, "F32", 4},
    {StDType::kF64, "F64", 8},   {StDType::kF8E4M3, "F8_E4M3", 1}, {StDType::kF8E5M2, "F8_E5M2", 1},
};

const DTypeEntry* dtype_by_name(std::string_view s) {
  for (const auto& e : kDTypes) {
    if (e.name == s) return &e;
  }
  return nullptr;
}

// A JSON number that is a non-negative integer (nlohmann keeps integers exact).
bool as_u64(const json& j, uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer()) {
    const auto v = j.get<int64_t>();
    if (v < 0) return false;
    out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

Status bad(const std::string& file, const std::string& what) {
  return data_loss("safetensors " + file + ": " + what);
}

Status parse_tensor(const std::string& file, const std::string& name, const json& e,
                    std::span<const uint8_t> data_area, const SafetensorsLimits& limits,
                    StTensor& t, uint64_t& begin, uint64_t& end) {
  const std::string where = "tensor '" + name + "'";
  if (name.empty()) return bad(file, "a tensor has an empty name");
  if (!e.is_object()) return bad(file, where + " is not a JSON object");
  for (const auto& [k, unused] : e.items()) {
    (void)unused;
    if (k != "dtype" && k != "shape" && k != "data_offsets") {
      return bad(file, where + " has an unknown field '" + k + "'");
    }
  }
  const auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) return bad(file, where + ": 'dtype' must be a string");
  const DTypeEntry* entry = dtype_by_name(dt->get_ref<const std::string&>());
  if (entry == nullptr) {
    return bad(file, where + ": unknown dtype '" + dt->get_ref<const std::string&>() + "'");
  }
  const auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array()) return bad(file, where + ": 'shape' must be an array");
  if (sh->size() > limits.max_dims) {
    return bad(file, where + ": " + std::to_string(sh->size()) + " dimensions (at most " +
                         std::to_string(limits.max_dims) + ")");
  }
  uint64_t n = 1;
  t.shape.clear();
  for (const json& d : *sh) {
    uint64_t v = 0;
    if (!as_u64(d, v)) return bad(file, where + ": shape entries must be non-negative integers");
    if (__builtin_mul_overflow(n, v, &n)) return bad(file, where + ": shape overflows");
    t.shape.push_back(v);
  }
  uint64_t n_bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<uint64_t>(entry->size), &n_bytes)) {
    return bad(file, where + ": byte size overflows");
  }
  const auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !as_u64((*off)[0], begin) ||
      !as_u64((*off)[1], end)) {
    return bad(file, where + ": 'data_offsets' must be two non-negative integers");
  }
  if (begin > end) return bad(file, where + ": data_offsets begin > end");
  if (end > data_area.size()) {
    return bad(file, where + ": data ends at byte " + std::to_string(end) +
                         " of the data area, which holds only " + std::to_string(data_area.size()) +
                         " (truncated file?)");
  }
  if (end - begin != n_bytes) {
    return bad(file, where + ": " + std::string(entry->name) + " shape needs " +
                         std::to_string(n_bytes) + " bytes but data_offsets span " +
                         std::to_string(end - begin));
  }
  t.name = name;
  t.dtype = entry->type;
  t.n_elements = n;
  t.data = data_area.subspan(begin, end - begin);
  return {};
}

}  // namespace

std::string_view st_dtype_name(StDType t) {
  for (const auto& e : kDTypes) {
    if (e.type == t) return e.name;
  }
  return "?";
}

size_t st_dtype_size(StDType t) {
  for (const auto& e : kDTypes) {
    if (e.type == t) return e.size;
  }
  return 0;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, std::string name,
                                               const SafetensorsLimits& limits) {
  if (bytes.size() < 8) {
    return bad(name, "file is " + std::to_string(bytes.size()) +
                         " bytes, shorter than the 8-byte header length");
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian hosts only (as GGUF)
  if (header_len > limits.max_header_bytes) {
    return bad(name, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                         std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (header_len > bytes.size() - 8) {
    return bad(name, "header length " + std::to_string(header_len) + " runs past the end of the " +
                         std::to_string(bytes.size()) + "-byte file (truncated?)");
  }
  if (header_len < 2 || bytes[8] != '{') {
    return bad(name, "header is not a JSON object");
  }
  const auto* hb = reinterpret_cast<const char*>(bytes.data() + 8);
  const json header = json::parse(hb, hb + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return bad(name, "header is not valid JSON (an object)");
  }
  const std::span<const uint8_t> data_area = bytes.subspan(8 + header_len);

  SafetensorsFile f;
  f.name_ = std::move(name);
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) return bad(f.name_, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) return bad(f.name_, "__metadata__ value '" + mk + "' is not a string");
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    StTensor t;
    uint64_t begin = 0;
    uint64_t end = 0;
    GENIEX_TRY(parse_tensor(f.name_, key, value, data_area, limits, t, begin, end));
    ranges.push_back({begin, end, f.tensors_.size()});
    f.tensors_.push_back(std::move(t));
  }
  // The data area is exactly the tensors, back to back: no overlap, no gap, nothing after.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  for (const Range& r : ranges) {
    const std::string& tn = f.tensors_[r.index].name;
    if (r.begin < pos) {
      return bad(f.name_, "tensor '" + tn + "' overlaps the tensor before it in the data area");
    }
    if (r.begin > pos) {
      return bad(f.name_,
                 "gap of " + std::to_string(r.begin - pos) + " bytes before tensor '" + tn + "'");
    }
    pos = r.end;
  }
  if (pos != data_area.size()) {
    return bad(f.name_, "data area holds " + std::to_string(data_area.size()) +
                            " bytes but the tensors cover " + std::to_string(pos));
  }
  std::sort(f.tensors_.begin(), f.tensors_.end(),
            [](const StTensor& a, const StTensor& b) { return a.name < b.name; });
  return f;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path,
                                              const SafetensorsLimits& limits) {
  GENIEX_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  GENIEX_ASSIGN_OR_RETURN(SafetensorsFile f, parse(file->bytes(), path, limits));
  f.file_ = std::move(file);
  return f;
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it =
      std::lower_bound(tensors_.begin(), tensors_.end(), name,
                       [](const StTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

Result<SafetensorsModel> SafetensorsModel::open_dir(const std::string& dir,
                                                    const SafetensorsLimits& limits) {
  SafetensorsModel m;
  const std::string index_path = dir + "/model.safetensors.index.json";
  GENIEX_ASSIGN_OR_RETURN(std::optional<json> index, read_json_file_if_exists(index_path));
  std::map<std::string, std::set<std::string>> shard_tensors;  // shard file -> tensor names
  if (index.has_value()) {
    const auto wm = index->find("weight_map");
    if (!index->is_object() || wm == index->end() || !wm->is_object() || wm->empty()) {
      return data_loss(index_path + ": no 'weight_map' object naming the shards");
    }
    for (const auto& [tensor, shard] : wm->items()) {
      if (!shard.is_string())
        return data_loss(index_path + ": shard of '" + tensor + "' is not a string");
      const std::string& s = shard.get_ref<const std::string&>();
      if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..") {
        return data_loss(index_path + ": shard name '" + s + "' is not a file in the directory");
      }
      shard_tensors[s].insert(tensor);
    }
  } else {
    shard_tensors["model.safetensors"] = {};
  }
  for (const auto& [shard, names] : shard_tensors) {  // std::map: sorted by file name
    const std::string path = dir + "/" + shard;
    auto f = SafetensorsFile::open(path, limits);
    if (!f.ok()) {
      if (f.status().code() == StatusCode::kNotFound) {
        return not_found(index.has_value()
                             ? "missing shard " + path + " (listed in model.safetensors.index.json)"
                             : "missing " + path + " (and no model.safetensors.index.json)");
      }
      return f.status();
    }
    m.shards_.push_back(std::make_unique<SafetensorsFile>(std::move(f).value()));
    const SafetensorsFile& sf = *m.shards_.back();
    if (index.has_value()) {
      std::set<std::string> got;
      for (const auto& t : sf.tensors()) got.insert(t.name);
      for (const auto& n : names) {
        if (got.count(n) == 0) {
          return data_loss(path + ": tensor '" + n + "' listed in the index is not in the shard");
        }
      }
      for (const auto& n : got) {
        if (names.count(n) == 0) {
          return data_loss(path + ": tensor '" + n + "' is not mapped to this shard by the index");
        }
      }
    }
    for (const auto& t : sf.tensors()) {
      if (!m.by_name_.emplace(t.name, &t).second) {
        return data_loss(path + ": tensor '" + t.name + "' appears in more than one shard");
      }
      m.order_.push_back(&t);
    }
  }
  return m;
}

const StTensor* SafetensorsModel::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsModel::files() const {
  std::vector<std::string> out;
  for (const auto& s : shards_) out.push_back(s->name());
  return out;
}

}  // namespace geniex::convert
