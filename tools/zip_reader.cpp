#include "zip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace geniex::cli {
namespace {

constexpr uint32_t kEocdSignature = 0x06054b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr size_t kEocdSize = 22;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;
constexpr size_t kMaxComment = 0xFFFF;
constexpr size_t kChunk = size_t{1} << 20;  // sink pieces and inflate input steps
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflate = 8;

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// zlib's crc32 takes a uInt length: feed it in steps.
uint32_t update_crc(uint32_t crc, std::span<const uint8_t> data) {
  uLong c = crc;
  while (!data.empty()) {
    const size_t n = std::min<size_t>(data.size(), kChunk);
    c = ::crc32(c, data.data(), static_cast<uInt>(n));
    data = data.subspan(n);
  }
  return static_cast<uint32_t>(c);
}

// Raw-deflate stream (no zlib header, as zip stores it), ended on destruction.
class Inflater {
 public:
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (ready_) inflateEnd(&z_);
  }
  bool init() {
    ready_ = inflateInit2(&z_, -MAX_WBITS) == Z_OK;
    return ready_;
  }
  z_stream& z() { return z_; }

 private:
  z_stream z_{};
  bool ready_ = false;
};

}  // namespace

Result<ZipArchive> ZipArchive::parse(std::span<const uint8_t> bytes, std::string name) {
  const auto bad = [&](const std::string& what) { return data_loss("zip: " + name + ": " + what); };
  if (bytes.size() < kEocdSize) return bad("too short to be a zip archive");
  // The end record sits at the very end, after a comment of at most 64 KiB: take the last
  // signature whose comment length reaches no further than the end of the file.
  const size_t lowest =
      bytes.size() > kEocdSize + kMaxComment ? bytes.size() - kEocdSize - kMaxComment : 0;
  size_t eocd = SIZE_MAX;
  for (size_t i = bytes.size() - kEocdSize + 1; i-- > lowest;) {
    const uint8_t* p = bytes.data() + i;
    if (le32(p) == kEocdSignature && i + kEocdSize + le16(p + 20) <= bytes.size()) {
      eocd = i;
      break;
    }
  }
  if (eocd == SIZE_MAX) return bad("no end-of-central-directory record (not a zip, or truncated)");
  const uint8_t* e = bytes.data() + eocd;
  const uint16_t disk = le16(e + 4);
  const uint16_t cd_disk = le16(e + 6);
  const uint16_t n_disk = le16(e + 8);
  const uint16_t n_total = le16(e + 10);
  const uint32_t cd_size = le32(e + 12);
  const uint32_t cd_offset = le32(e + 16);
  if (n_total == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    return unimplemented("zip: " + name + ": ZIP64 archives are not supported");
  }
  if (disk != 0 || cd_disk != 0 || n_disk != n_total) {
    return unimplemented("zip: " + name + ": multi-disk archives are not supported");
  }
  if (uint64_t{cd_offset} + cd_size > eocd) {
    return bad("central directory (offset " + std::to_string(cd_offset) + ", " +
               std::to_string(cd_size) + " bytes) runs past the end record at " +
               std::to_string(eocd));
  }

  ZipArchive archive;
  archive.bytes_ = bytes;
  archive.name_ = std::move(name);
  archive.entries_.reserve(std::min<size_t>(n_total, cd_size / kCentralSize));
  size_t pos = cd_offset;
  const size_t cd_end = size_t{cd_offset} + cd_size;
  for (uint32_t i = 0; i < n_total; ++i) {
    const std::string where = "central directory entry " + std::to_string(i);
    if (pos + kCentralSize > cd_end) return bad(where + " runs past the directory");
    const uint8_t* c = bytes.data() + pos;
    if (le32(c) != kCentralSignature) return bad(where + " has a bad signature");
    ZipEntry entry;
    entry.flags = le16(c + 8);
    entry.method = le16(c + 10);
    entry.crc32 = le32(c + 16);
    entry.compressed_size = le32(c + 20);
    entry.uncompressed_size = le32(c + 24);
    const size_t name_len = le16(c + 28);
    const size_t extra_len = le16(c + 30);
    const size_t comment_len = le16(c + 32);
    entry.local_header_offset = le32(c + 42);
    const size_t record = kCentralSize + name_len + extra_len + comment_len;
    if (pos + record > cd_end) return bad(where + " runs past the directory");
    entry.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_len);
    if (entry.compressed_size == 0xFFFFFFFF || entry.uncompressed_size == 0xFFFFFFFF ||
        entry.local_header_offset == 0xFFFFFFFF) {
      return unimplemented("zip: " + archive.name_ + ": '" + entry.name +
                           "' needs ZIP64, which is not supported");
    }
    archive.entries_.push_back(std::move(entry));
    pos += record;
  }
  return archive;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  for (const ZipEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Status ZipArchive::extract(const ZipEntry& entry, const ZipSink& sink) const {
  const std::string where = "zip: " + name_ + ": '" + entry.name + "'";
  if (entry.flags & 1u) return unimplemented(where + " is encrypted");
  if (entry.method != kMethodStored && entry.method != kMethodDeflate) {
    return unimplemented(where + " uses compression method " + std::to_string(entry.method) +
                         " (only stored and deflate are supported)");
  }
  const uint64_t off = entry.local_header_offset;
  if (off + kLocalSize > bytes_.size()) return data_loss(where + ": local header out of bounds");
  const uint8_t* l = bytes_.data() + off;
  if (le32(l) != kLocalSignature) return data_loss(where + ": bad local header signature");
  const uint64_t data_start = off + kLocalSize + le16(l + 26) + le16(l + 28);
  if (data_start + entry.compressed_size > bytes_.size()) {
    return data_loss(where + ": data (" + std::to_string(entry.compressed_size) +
                     " bytes at offset " + std::to_string(data_start) +
                     ") runs past the end of the archive: truncated?");
  }
  std::span<const uint8_t> in = bytes_.subspan(data_start, entry.compressed_size);
  uint32_t crc = 0;
  uint64_t produced = 0;

  if (entry.method == kMethodStored) {
    if (entry.compressed_size != entry.uncompressed_size) {
      return data_loss(where + ": stored member with different compressed and uncompressed sizes");
    }
    while (!in.empty()) {
      const std::span<const uint8_t> piece = in.first(std::min(in.size(), kChunk));
      crc = update_crc(crc, piece);
      GENIEX_TRY(sink(piece));
      in = in.subspan(piece.size());
    }
    produced = entry.uncompressed_size;
  } else {
    Inflater inflater;
    if (!inflater.init()) return internal_error(where + ": zlib inflateInit2 failed");
    z_stream& z = inflater.z();
    std::vector<uint8_t> out(kChunk);
    bool done = false;
    while (!done) {
      if (z.avail_in == 0 && !in.empty()) {
        const size_t n = std::min(in.size(), kChunk);
        z.next_in = const_cast<Bytef*>(in.data());  // zlib's API is not const-correct
        z.avail_in = static_cast<uInt>(n);
        in = in.subspan(n);
      }
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      const int rc = inflate(&z, Z_NO_FLUSH);
      const size_t got = out.size() - z.avail_out;
      if (rc == Z_STREAM_END) {
        done = true;
      } else if (rc == Z_BUF_ERROR) {
        // No progress possible: out of input for good, or a stall on input zlib will not take.
        if (z.avail_in == 0 && in.empty()) {
          return data_loss(where + ": deflate data ends early (truncated?)");
        }
        if (z.avail_in > 0 && got == 0) return data_loss(where + ": deflate data is corrupt");
      } else if (rc != Z_OK) {
        return data_loss(
            where + ": deflate data is corrupt (" +
            std::string(z.msg != nullptr ? z.msg : "zlib error " + std::to_string(rc)) + ")");
      }
      if (got > 0) {
        produced += got;
        if (produced > entry.uncompressed_size) {
          return data_loss(where + ": inflates past its declared size of " +
                           std::to_string(entry.uncompressed_size) + " bytes");
        }
        const std::span<const uint8_t> piece(out.data(), got);
        crc = update_crc(crc, piece);
        GENIEX_TRY(sink(piece));
      }
    }
  }
  if (produced != entry.uncompressed_size) {
    return data_loss(where + ": " + std::to_string(produced) + " bytes instead of " +
                     std::to_string(entry.uncompressed_size));
  }
  if (crc != entry.crc32) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "CRC-32 %08x instead of %08x", crc, entry.crc32);
    return data_loss(where + ": " + buf + " (corrupt data)");
  }
  return Status::ok_status();
}

}  // namespace geniex::cli
