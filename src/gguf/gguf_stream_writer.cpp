#include "gguf/gguf_stream_writer.h"

#include <cerrno>
#include <cstring>

#include "gguf/gguf_reader.h"

namespace geniex::gguf {
namespace {

std::string scratch_path(const std::string& path) { return path + ".data.tmp"; }

}  // namespace

Result<GgufStreamWriter> GgufStreamWriter::create(std::string path) {
  std::FILE* f = std::fopen(scratch_path(path).c_str(), "w+b");
  if (f == nullptr) {
    return io_error("gguf writer: cannot create " + scratch_path(path) + ": " +
                    std::strerror(errno));
  }
  return GgufStreamWriter(std::move(path), f);
}

GgufStreamWriter::GgufStreamWriter(std::string path, std::FILE* data)
    : path_(std::move(path)), data_(data) {}

GgufStreamWriter::GgufStreamWriter(GgufStreamWriter&& o) noexcept
    : path_(std::move(o.path_)),
      data_(o.data_),
      tensors_(std::move(o.tensors_)),
      data_bytes_(o.data_bytes_) {
  o.data_ = nullptr;
}

GgufStreamWriter::~GgufStreamWriter() { discard(); }

void GgufStreamWriter::discard() {
  if (data_ == nullptr) return;
  std::fclose(data_);
  data_ = nullptr;
  std::remove(scratch_path(path_).c_str());
}

Status GgufStreamWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne,
                                    std::span<const uint8_t> data) {
  if (data_ == nullptr) return invalid_argument("gguf writer: already finished");
  for (const auto& t : tensors_) {
    if (t.name == name) {
      return invalid_argument("gguf writer: duplicate tensor name '" + name + "'");
    }
  }
  // The entry is checked by serializing it alone (name, dims, block multiple, size).
  uint64_t bytes = 0;
  GENIEX_TRY(serialize_header({}, {TensorHeader{name, type, ne}}, nullptr, &bytes).status());
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;  // no overflow: serialize_header checked the shape
  const uint64_t exact = n / traits(type).block_size * traits(type).type_size;
  const uint64_t padded =
      (data.size() + kDefaultAlignment - 1) / kDefaultAlignment * kDefaultAlignment;
  if (data.size() != exact || padded != bytes) {
    return invalid_argument("gguf writer: tensor '" + name + "' has " +
                            std::to_string(data.size()) + " bytes of data, not its size");
  }
  static constexpr uint8_t kZeros[kDefaultAlignment] = {};
  if (std::fwrite(data.data(), 1, data.size(), data_) != data.size() ||
      std::fwrite(kZeros, 1, padded - data.size(), data_) != padded - data.size()) {
    return io_error("gguf writer: failed writing " + scratch_path(path_) + ": " +
                    std::strerror(errno));
  }
  data_bytes_ += padded;
  tensors_.push_back({std::move(name), type, std::move(ne)});
  return {};
}

Status GgufStreamWriter::finish(const std::vector<KeyValue>& kv) {
  if (data_ == nullptr) return invalid_argument("gguf writer: already finished");
  uint64_t align = 0, bytes = 0;
  auto header = serialize_header(kv, tensors_, &align, &bytes);
  if (!header.ok()) {
    discard();
    return header.status();
  }
  if (align != kDefaultAlignment || bytes != data_bytes_) {
    discard();
    return invalid_argument("gguf writer: streamed tensors need the default alignment");
  }
  const std::string tmp = path_ + ".tmp";
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  bool ok = out != nullptr && std::fwrite(header->data(), 1, header->size(), out) == header->size();
  ok = ok && std::fflush(data_) == 0 && std::fseek(data_, 0, SEEK_SET) == 0;
  std::vector<uint8_t> buf(size_t{8} << 20);
  while (ok) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), data_);
    if (n == 0) {
      ok = std::ferror(data_) == 0;
      break;
    }
    ok = std::fwrite(buf.data(), 1, n, out) == n;
  }
  if (out != nullptr && std::fclose(out) != 0) ok = false;
  discard();
  if (!ok) {
    std::remove(tmp.c_str());
    return io_error("gguf writer: failed writing " + tmp);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::remove(tmp.c_str());
    return io_error("gguf writer: cannot rename " + tmp + " to " + path_ + ": " +
                    std::strerror(errno));
  }
  return {};
}

}  // namespace geniex::gguf
