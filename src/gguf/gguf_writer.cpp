#include "gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <type_traits>

#include "gguf/gguf_reader.h"

namespace geniex::gguf {
namespace {

class ByteSink {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void put_bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  void pad_to(uint64_t align) {
    while (out_.size() % align != 0) out_.push_back(0);
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

void put_scalar_int(ByteSink& b, ValueType t, uint64_t bits) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8: b.put(static_cast<uint8_t>(bits)); break;
    case ValueType::kUint16:
    case ValueType::kInt16: b.put(static_cast<uint16_t>(bits)); break;
    case ValueType::kUint32:
    case ValueType::kInt32: b.put(static_cast<uint32_t>(bits)); break;
    default: b.put(bits); break;
  }
}

void put_float(ByteSink& b, ValueType t, double v) {
  if (t == ValueType::kFloat32) {
    b.put(static_cast<float>(v));
  } else {
    b.put(v);
  }
}

void put_value(ByteSink& b, const Value& v) {
  const ValueType t = v.type();
  std::visit(
      [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, uint64_t>) {
          put_scalar_int(b, t, s);
        } else if constexpr (std::is_same_v<S, int64_t>) {
          put_scalar_int(b, t, static_cast<uint64_t>(s));
        } else if constexpr (std::is_same_v<S, double>) {
          put_float(b, t, s);
        } else if constexpr (std::is_same_v<S, bool>) {
          b.put(static_cast<uint8_t>(s ? 1 : 0));
        } else if constexpr (std::is_same_v<S, std::string>) {
          b.put_string(s);
        } else {
          b.put(static_cast<uint32_t>(v.elem_type()));
          b.put<uint64_t>(s.size());
          for (const auto& e : s) {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, std::string>) {
              b.put_string(e);
            } else if constexpr (std::is_same_v<E, double>) {
              put_float(b, v.elem_type(), e);
            } else if constexpr (std::is_same_v<S, std::vector<bool>>) {
              b.put(static_cast<uint8_t>(e ? 1 : 0));
            } else {
              put_scalar_int(b, v.elem_type(), static_cast<uint64_t>(e));
            }
          }
        }
      },
      v.storage());
}

Result<uint64_t> alignment_of(const std::vector<KeyValue>& kvs) {
  uint64_t align = kDefaultAlignment;
  for (const auto& kv : kvs) {
    if (kv.key == "general.alignment") {
      const auto a = kv.value.as_uint();
      if (!a || *a == 0 || (*a & (*a - 1)) != 0) {
        return invalid_argument("gguf writer: general.alignment must be a power of two");
      }
      align = *a;
    }
  }
  return align;
}

}  // namespace

Result<std::vector<uint8_t>> serialize_header(const std::vector<KeyValue>& kvs,
                                              const std::vector<TensorHeader>& tensors,
                                              uint64_t* alignment_out, uint64_t* data_bytes_out) {
  GENIEX_ASSIGN_OR_RETURN(const uint64_t align, alignment_of(kvs));
  ByteSink b;
  b.put(kMagic);
  b.put<uint32_t>(3);
  b.put<uint64_t>(tensors.size());
  b.put<uint64_t>(kvs.size());
  for (const auto& kv : kvs) {
    b.put_string(kv.key);
    b.put(static_cast<uint32_t>(kv.value.type()));
    put_value(b, kv.value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name.size() > kMaxNameLength || t.ne.empty() ||
        t.ne.size() > kMaxDims) {
      return invalid_argument("gguf writer: bad tensor entry '" + t.name + "'");
    }
    uint64_t n = 1;
    for (uint64_t d : t.ne) {
      if (__builtin_mul_overflow(n, d, &n)) {
        return invalid_argument("gguf writer: tensor '" + t.name + "' shape overflows");
      }
    }
    const auto& tt = traits(t.type);
    if (t.ne[0] % tt.block_size != 0) {
      return invalid_argument("gguf writer: tensor '" + t.name + "' ne[0] is not a multiple of " +
                              std::to_string(tt.block_size));
    }
    b.put_string(t.name);
    b.put(static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) b.put(d);
    b.put(static_cast<uint32_t>(t.type));
    b.put(offset);
    const uint64_t bytes = n / tt.block_size * tt.type_size;
    offset += (bytes + align - 1) / align * align;
  }
  if (!tensors.empty()) b.pad_to(align);
  if (alignment_out) *alignment_out = align;
  if (data_bytes_out) *data_bytes_out = offset;
  return std::move(b.bytes());
}

void GgufWriter::set(std::string key, Value value) {
  for (auto& kv : kv_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kv_.push_back({std::move(key), std::move(value)});
}

Status GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne,
                              std::span<const uint8_t> data) {
  if (name.empty() || name.size() > kMaxNameLength) {
    return invalid_argument("gguf writer: tensor name '" + name + "' must be 1.." +
                            std::to_string(kMaxNameLength) + " bytes");
  }
  for (const auto& t : tensors_) {
    if (t.name == name)
      return invalid_argument("gguf writer: duplicate tensor name '" + name + "'");
  }
  if (ne.empty() || ne.size() > kMaxDims) {
    return invalid_argument("gguf writer: tensor '" + name + "' needs 1..4 dimensions");
  }
  uint64_t n = 1;
  for (uint64_t d : ne) {
    if (__builtin_mul_overflow(n, d, &n)) {
      return invalid_argument("gguf writer: tensor '" + name + "' shape overflows");
    }
  }
  const auto& tt = traits(type);
  if (ne[0] % tt.block_size != 0) {
    return invalid_argument("gguf writer: tensor '" + name + "' ne[0] is not a multiple of " +
                            std::to_string(tt.block_size));
  }
  const uint64_t n_bytes = n / tt.block_size * tt.type_size;
  if (n_bytes != data.size()) {
    return invalid_argument("gguf writer: tensor '" + name + "' expects " +
                            std::to_string(n_bytes) + " bytes, got " + std::to_string(data.size()));
  }
  tensors_.push_back({std::move(name), type, std::move(ne), {data.begin(), data.end()}});
  return {};
}

Result<std::vector<uint8_t>> GgufWriter::to_bytes() const {
  uint64_t align = kDefaultAlignment;
  for (const auto& kv : kv_) {
    if (kv.key == "general.alignment") {
      const auto a = kv.value.as_uint();
      if (!a || *a == 0 || (*a & (*a - 1)) != 0) {
        return invalid_argument("gguf writer: general.alignment must be a power of two");
      }
      align = *a;
    }
  }
  ByteSink b;
  b.put(kMagic);
  b.put<uint32_t>(3);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(kv_.size());
  for (const auto& kv : kv_) {
    b.put_string(kv.key);
    b.put(static_cast<uint32_t>(kv.value.type()));
    put_value(b, kv.value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    b.put_string(t.name);
    b.put(static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) b.put(d);
    b.put(static_cast<uint32_t>(t.type));
    b.put(offset);
    offset += (t.data.size() + align - 1) / align * align;
  }
  if (!tensors_.empty()) {
    b.pad_to(align);
    for (const auto& t : tensors_) {
      b.put_bytes(t.data);
      b.pad_to(align);
    }
  }
  return std::move(b.bytes());
}

Status GgufWriter::write(const std::string& path) const {
  GENIEX_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, to_bytes());
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return io_error("gguf writer: cannot create " + tmp + ": " + std::strerror(errno));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return io_error("gguf writer: failed writing " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return io_error("gguf writer: cannot rename " + tmp + " to " + path + ": " +
                    std::strerror(errno));
  }
  return {};
}

}  // namespace geniex::gguf
