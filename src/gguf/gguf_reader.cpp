#include "gguf/gguf_reader.h"

#include <cstring>
#include <limits>
#include <type_traits>

namespace geniex::gguf {

// Walks the bytes of a GGUF file; every read is bounds-checked and every failure names the
// file, the field and what was wrong.
class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const std::string& name, const ReaderLimits& limits)
      : bytes_(bytes), name_(name), limits_(limits) {}

  Status parse(GgufFile& out);

 private:
  [[nodiscard]] size_t remaining() const { return bytes_.size() - pos_; }

  Status fail(const std::string& field, const std::string& what) const {
    return data_loss("gguf: " + name_ + ": " + field + ": " + what);
  }
  Status truncated(const std::string& field) const {
    return fail(field, "file truncated at offset " + std::to_string(pos_) + " (file size " +
                           std::to_string(bytes_.size()) + ")");
  }

  template <typename T>
  Status read(T& v, const std::string& field) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return truncated(field);
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // little-endian host assumed
    pos_ += sizeof(T);
    return {};
  }

  Status read_string(std::string& s, const std::string& field) {
    uint64_t len = 0;
    GENIEX_TRY(read(len, field + " (string length)"));
    if (len > limits_.max_string) {
      return fail(field, "string length " + std::to_string(len) + " exceeds the limit of " +
                             std::to_string(limits_.max_string));
    }
    if (len > remaining()) {
      return fail(field, "string length " + std::to_string(len) + " runs past the end of the file");
    }
    s.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return {};
  }

  Status read_value_type(ValueType& t, const std::string& field) {
    uint32_t raw = 0;
    GENIEX_TRY(read(raw, field));
    if (!is_valid_value_type(raw)) return fail(field, "unknown value type " + std::to_string(raw));
    t = static_cast<ValueType>(raw);
    return {};
  }

  Status read_scalar(ValueType t, Value& out, const std::string& field);
  Status read_array(Value& out, const std::string& field);
  Status read_value(ValueType t, Value& out, const std::string& field);
  Status read_tensor_info(uint64_t index, TensorInfo& ti);

  std::span<const uint8_t> bytes_;
  const std::string& name_;
  const ReaderLimits& limits_;
  size_t pos_ = 0;
};

namespace {

// Reads one integer of on-disk type T at `p` (no bounds check: callers checked the span).
template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

uint64_t load_unsigned(ValueType t, const uint8_t* p) {
  switch (t) {
    case ValueType::kUint8: return load<uint8_t>(p);
    case ValueType::kUint16: return load<uint16_t>(p);
    case ValueType::kUint32: return load<uint32_t>(p);
    default: return load<uint64_t>(p);
  }
}

int64_t load_signed(ValueType t, const uint8_t* p) {
  switch (t) {
    case ValueType::kInt8: return load<int8_t>(p);
    case ValueType::kInt16: return load<int16_t>(p);
    case ValueType::kInt32: return load<int32_t>(p);
    default: return load<int64_t>(p);
  }
}

double load_float(ValueType t, const uint8_t* p) {
  return t == ValueType::kFloat32 ? static_cast<double>(load<float>(p)) : load<double>(p);
}

bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}
bool checked_add(uint64_t a, uint64_t b, uint64_t& out) {
  return !__builtin_add_overflow(a, b, &out);
}

}  // namespace

Status Parser::read_scalar(ValueType t, Value& out, const std::string& field) {
  const uint32_t size = value_type_size(t);
  if (remaining() < size) return truncated(field);
  const uint8_t* p = bytes_.data() + pos_;
  pos_ += size;
  if (t == ValueType::kBool) {
    out = Value::of_bool(*p != 0);  // any non-zero byte is true, as llama.cpp reads it
  } else if (is_float_type(t)) {
    out = Value::of_float(t, load_float(t, p));
  } else if (is_signed_integer_type(t)) {
    out = Value::of_int(t, load_signed(t, p));
  } else {
    out = Value::of_uint(t, load_unsigned(t, p));
  }
  return {};
}

Status Parser::read_array(Value& out, const std::string& field) {
  ValueType elem{};
  GENIEX_TRY(read_value_type(elem, field + " (array element type)"));
  uint64_t count = 0;
  GENIEX_TRY(read(count, field + " (array length)"));
  if (elem == ValueType::kArray) return fail(field, "nested arrays are not supported");
  // Every element takes at least one byte (strings at least 8), so a count larger than the
  // rest of the file is corrupt; this bounds every allocation below by the file size.
  const uint64_t min_elem = elem == ValueType::kString ? 8 : value_type_size(elem);
  uint64_t need = 0;
  if (!checked_mul(count, min_elem, need) || need > remaining()) {
    return fail(field, "array of " + std::to_string(count) + " " +
                           std::string(value_type_name(elem)) +
                           " elements does not fit in the rest of the file (" +
                           std::to_string(remaining()) + " bytes)");
  }
  const auto n = static_cast<size_t>(count);
  const uint8_t* p = bytes_.data() + pos_;
  const uint32_t size = value_type_size(elem);
  if (elem == ValueType::kString) {
    std::vector<std::string> v(n);
    for (size_t i = 0; i < n; ++i) {
      GENIEX_TRY(read_string(v[i], field + "[" + std::to_string(i) + "]"));
    }
    out = Value::of_string_array(std::move(v));
    return {};
  }
  pos_ += n * size;
  if (elem == ValueType::kBool) {
    std::vector<bool> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = p[i] != 0;
    out = Value::of_bool_array(std::move(v));
  } else if (is_float_type(elem)) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = load_float(elem, p + i * size);
    out = Value::of_float_array(elem, std::move(v));
  } else if (is_signed_integer_type(elem)) {
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = load_signed(elem, p + i * size);
    out = Value::of_int_array(elem, std::move(v));
  } else {
    std::vector<uint64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = load_unsigned(elem, p + i * size);
    out = Value::of_uint_array(elem, std::move(v));
  }
  return {};
}

Status Parser::read_value(ValueType t, Value& out, const std::string& field) {
  if (t == ValueType::kString) {
    std::string s;
    GENIEX_TRY(read_string(s, field));
    out = Value::of_string(std::move(s));
    return {};
  }
  if (t == ValueType::kArray) return read_array(out, field);
  return read_scalar(t, out, field);
}

Status Parser::read_tensor_info(uint64_t index, TensorInfo& ti) {
  const std::string where = "tensor #" + std::to_string(index);
  GENIEX_TRY(read_string(ti.name, where + " name"));
  const std::string field = where + " '" + ti.name + "'";
  if (ti.name.empty()) return fail(where, "empty tensor name");
  if (ti.name.size() > kMaxNameLength) {
    return fail(field, "name is " + std::to_string(ti.name.size()) + " bytes; the limit is " +
                           std::to_string(kMaxNameLength));
  }
  GENIEX_TRY(read(ti.n_dims, field + " n_dims"));
  if (ti.n_dims < 1 || ti.n_dims > kMaxDims) {
    return fail(field, "n_dims is " + std::to_string(ti.n_dims) + "; must be 1.." +
                           std::to_string(kMaxDims));
  }
  ti.ne = {1, 1, 1, 1};
  uint64_t n_elements = 1;
  for (uint32_t d = 0; d < ti.n_dims; ++d) {
    uint64_t ne = 0;
    GENIEX_TRY(read(ne, field + " ne[" + std::to_string(d) + "]"));
    if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return fail(field, "ne[" + std::to_string(d) + "] is negative or absurd (" +
                             std::to_string(ne) + ")");
    }
    if (!checked_mul(n_elements, ne, n_elements) ||
        n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return fail(field, "shape overflows: the element count exceeds 2^63");
    }
    ti.ne[d] = ne;
  }
  uint32_t raw_type = 0;
  GENIEX_TRY(read(raw_type, field + " type"));
  const auto tt = ggml_type_traits(raw_type);
  if (!tt) return fail(field, "unknown tensor type id " + std::to_string(raw_type));
  ti.type = tt->type;
  if (ti.ne[0] % tt->block_size != 0) {
    return fail(field, "ne[0] = " + std::to_string(ti.ne[0]) + " is not a multiple of the " +
                           std::string(tt->name) + " block size " + std::to_string(tt->block_size));
  }
  // n_elements < 2^63 and type_size/block_size <= 4.5, so this cannot overflow after the
  // division; compute carefully anyway.
  const uint64_t n_blocks = n_elements / tt->block_size;
  if (!checked_mul(n_blocks, tt->type_size, ti.n_bytes)) {
    return fail(field, "byte size overflows");
  }
  GENIEX_TRY(read(ti.offset, field + " offset"));
  return {};
}

Status Parser::parse(GgufFile& out) {
  uint32_t magic = 0;
  if (bytes_.size() < 4)
    return fail("magic",
                "file is " + std::to_string(bytes_.size()) + " bytes; too short to be GGUF");
  GENIEX_TRY(read(magic, "magic"));
  if (magic != kMagic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "bad magic 0x%08x (expected \"GGUF\")", magic);
    return fail("magic", buf);
  }
  GENIEX_TRY(read(out.version_, "version"));
  if (out.version_ != 2 && out.version_ != 3) {
    return fail("version",
                "unsupported GGUF version " + std::to_string(out.version_) + " (supported: 2, 3)");
  }
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  GENIEX_TRY(read(n_tensors, "tensor count"));
  GENIEX_TRY(read(n_kv, "metadata count"));
  if (n_tensors > limits_.max_tensors) {
    return fail("tensor count", std::to_string(n_tensors) + " exceeds the limit of " +
                                    std::to_string(limits_.max_tensors));
  }
  if (n_kv > limits_.max_kv) {
    return fail("metadata count",
                std::to_string(n_kv) + " exceeds the limit of " + std::to_string(limits_.max_kv));
  }
  // Each KV takes >= 13 bytes and each tensor info >= 33: reject counts the file can't hold
  // before reserving anything.
  if (n_kv * 13 > remaining() || n_tensors * 33 > remaining()) {
    return fail("header", "counts (" + std::to_string(n_kv) + " metadata, " +
                              std::to_string(n_tensors) + " tensors) do not fit in the file size " +
                              std::to_string(bytes_.size()));
  }

  out.kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    GENIEX_TRY(read_string(kv.key, "metadata #" + std::to_string(i) + " key"));
    const std::string field = "metadata '" + kv.key + "'";
    if (kv.key.empty()) return fail("metadata #" + std::to_string(i), "empty key");
    ValueType t{};
    GENIEX_TRY(read_value_type(t, field + " type"));
    GENIEX_TRY(read_value(t, kv.value, field));
    if (!out.kv_index_.emplace(kv.key, out.kv_.size()).second) {
      return fail(field, "duplicate key");
    }
    out.kv_.push_back(std::move(kv));
  }

  if (const Value* a = out.find("general.alignment")) {
    const auto v = a->as_uint();
    if (!v || *v == 0 || (*v & (*v - 1)) != 0 || *v > (1u << 30)) {
      return fail("metadata 'general.alignment'",
                  "must be a power-of-two integer, got " + a->to_display());
    }
    out.alignment_ = static_cast<uint32_t>(*v);
  }

  out.tensors_.resize(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo& ti = out.tensors_[static_cast<size_t>(i)];
    GENIEX_TRY(read_tensor_info(i, ti));
    if (!out.tensor_index_.emplace(ti.name, static_cast<size_t>(i)).second) {
      return fail("tensor #" + std::to_string(i) + " '" + ti.name + "'", "duplicate tensor name");
    }
  }

  // The data section starts at the next multiple of the alignment; a file without tensors
  // may end right after its metadata.
  const uint64_t align = out.alignment_;
  const uint64_t data_start = (pos_ + align - 1) / align * align;
  if (n_tensors > 0 && data_start > bytes_.size()) {
    return fail("data section", "starts at " + std::to_string(data_start) +
                                    ", past the end of the file (" + std::to_string(bytes_.size()) +
                                    " bytes)");
  }
  out.data_offset_ = data_start;
  for (auto& ti : out.tensors_) {
    const std::string field = "tensor '" + ti.name + "'";
    if (ti.offset % align != 0) {
      return fail(field, "data offset " + std::to_string(ti.offset) +
                             " is not a multiple of the alignment " + std::to_string(align));
    }
    uint64_t begin = 0;
    uint64_t end = 0;
    if (!checked_add(data_start, ti.offset, begin) || !checked_add(begin, ti.n_bytes, end) ||
        end > bytes_.size()) {
      return fail(field, "data [" + std::to_string(ti.offset) + ", +" + std::to_string(ti.n_bytes) +
                             ") lies outside the file (data section " + std::to_string(data_start) +
                             ", file size " + std::to_string(bytes_.size()) + ")");
    }
    ti.data = bytes_.subspan(static_cast<size_t>(begin), static_cast<size_t>(ti.n_bytes));
  }
  return {};
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, std::string name,
                                 const ReaderLimits& limits) {
  GgufFile f;
  f.name_ = std::move(name);
  f.bytes_ = bytes;
  Parser p(bytes, f.name_, limits);
  GENIEX_TRY(p.parse(f));
  return f;
}

Result<GgufFile> GgufFile::open(const std::string& path, const ReaderLimits& limits) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) {
    const Status& s = mapped.status();
    return Status(s.code(), "gguf: " + s.message());
  }
  auto mapping = std::make_shared<MappedFile>(std::move(mapped).value());
  GENIEX_ASSIGN_OR_RETURN(GgufFile f, parse(mapping->bytes(), path, limits));
  f.mapping_ = std::move(mapping);
  return f;
}

const Value* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status missing(const std::string& file, std::string_view key) {
  return not_found("gguf: " + file + ": metadata key '" + std::string(key) + "' is missing");
}

Status wrong_type(const std::string& file, std::string_view key, const Value& v,
                  std::string_view wanted) {
  std::string got(value_type_name(v.type()));
  if (v.is_array()) got += " of " + std::string(value_type_name(v.elem_type()));
  return invalid_argument("gguf: " + file + ": metadata key '" + std::string(key) + "' is " + got +
                          ", expected " + std::string(wanted));
}

}  // namespace

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  if (v->is_array() || !is_integer_type(v->type())) return wrong_type(name_, key, *v, "an integer");
  const auto u = v->as_uint();
  if (!u)
    return invalid_argument("gguf: " + name_ + ": metadata key '" + std::string(key) +
                            "' is negative (" + v->to_display() + ")");
  return *u;
}

Result<uint64_t> GgufFile::get_uint_or(std::string_view key, uint64_t fallback) const {
  if (!find(key)) return fallback;
  return get_uint(key);
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  if (v->is_array() || !is_integer_type(v->type())) return wrong_type(name_, key, *v, "an integer");
  const auto i = v->as_int();
  if (!i)
    return invalid_argument("gguf: " + name_ + ": metadata key '" + std::string(key) +
                            "' does not fit in int64");
  return *i;
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  const auto d = v->is_array() ? std::nullopt : v->as_float();
  if (!d) return wrong_type(name_, key, *v, "a number");
  return *d;
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  const auto b = v->is_array() ? std::nullopt : v->as_bool();
  if (!b) return wrong_type(name_, key, *v, "BOOL");
  return *b;
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  const std::string* s = v->as_string();
  if (!s) return wrong_type(name_, key, *v, "STRING");
  return *s;
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  const auto* s = v->as_string_array();
  if (!s) return wrong_type(name_, key, *v, "ARRAY of STRING");
  return *s;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  auto a = v->as_int_array();
  if (!a) return wrong_type(name_, key, *v, "ARRAY of integers");
  return std::move(*a);
}

Result<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(name_, key);
  auto a = v->as_float_array();
  if (!a) return wrong_type(name_, key, *v, "ARRAY of numbers");
  return std::move(*a);
}

}  // namespace geniex::gguf
