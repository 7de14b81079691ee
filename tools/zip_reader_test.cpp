// The zip reader against archives written by Python's zipfile (tests/data/zip/make_zips.py):
// stored and deflated members come out byte for byte; truncated, corrupt and unsupported
// archives give a clear Status, never a crash.
#include "zip_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace geniex::cli {
namespace {

std::vector<uint8_t> read_fixture(const std::string& name) {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  const std::string dir = root != nullptr ? root : GENIEX_TEST_SOURCE_DIR;
  std::ifstream in(dir + "/tests/data/zip/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// make_zips.py's rule for dir/big.bin.
std::vector<uint8_t> big(size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>((i * 7 + i / 4096) % 251);
  return out;
}

Result<std::vector<uint8_t>> extract(const ZipArchive& zip, const std::string& name) {
  const ZipEntry* e = zip.find(name);
  if (e == nullptr) return not_found(name);
  std::vector<uint8_t> out;
  GENIEX_TRY(zip.extract(*e, [&](std::span<const uint8_t> piece) {
    out.insert(out.end(), piece.begin(), piece.end());
    return Status::ok_status();
  }));
  return out;
}

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

uint32_t get32(const std::vector<uint8_t>& b, size_t at) {
  return b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (static_cast<uint32_t>(b[at + 3]) << 24);
}

// Offset of the central-directory record of `name` (walks the directory from the end record).
size_t central_record(const std::vector<uint8_t>& b, const std::string& name) {
  size_t eocd = b.size() - 22;
  while (get32(b, eocd) != 0x06054b50) --eocd;
  size_t pos = get32(b, eocd + 16);
  for (;;) {
    const size_t n = b[pos + 28] | (b[pos + 29] << 8);
    const size_t m = b[pos + 30] | (b[pos + 31] << 8);
    const size_t k = b[pos + 32] | (b[pos + 33] << 8);
    if (std::string(b.begin() + static_cast<long>(pos) + 46,
                    b.begin() + static_cast<long>(pos + 46 + n)) == name) {
      return pos;
    }
    pos += 46 + n + m + k;
  }
}

TEST(ZipReader, StoredMembers) {
  const std::vector<uint8_t> bytes = read_fixture("stored.zip");
  ASSERT_FALSE(bytes.empty());
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "stored.zip");
  ASSERT_TRUE(zip.ok()) << zip.status().to_string();
  ASSERT_EQ(zip->entries().size(), 3u);
  EXPECT_EQ(zip->entries()[0].name, "hello.txt");
  EXPECT_EQ(zip->entries()[0].method, 0);
  Result<std::vector<uint8_t>> hello = extract(*zip, "hello.txt");
  ASSERT_TRUE(hello.ok()) << hello.status().to_string();
  EXPECT_EQ(std::string(hello->begin(), hello->end()), "hello from zipfile\n");
  Result<std::vector<uint8_t>> empty = extract(*zip, "empty.txt");
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_TRUE(empty->empty());
  Result<std::vector<uint8_t>> blob = extract(*zip, "dir/big.bin");
  ASSERT_TRUE(blob.ok()) << blob.status().to_string();
  EXPECT_EQ(*blob, big(5000));
  EXPECT_EQ(zip->find("missing"), nullptr);
}

TEST(ZipReader, DeflatedMembersAndArchiveComment) {
  const std::vector<uint8_t> bytes = read_fixture("deflated.zip");
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "deflated.zip");
  ASSERT_TRUE(zip.ok()) << zip.status().to_string();
  ASSERT_EQ(zip->entries().size(), 3u);
  EXPECT_EQ(zip->entries()[2].method, 8);
  Result<std::vector<uint8_t>> hello = extract(*zip, "hello.txt");
  ASSERT_TRUE(hello.ok()) << hello.status().to_string();
  EXPECT_EQ(std::string(hello->begin(), hello->end()), "hello from zipfile\n");
  Result<std::vector<uint8_t>> blob = extract(*zip, "dir/big.bin");  // several 1 MiB steps
  ASSERT_TRUE(blob.ok()) << blob.status().to_string();
  EXPECT_EQ(*blob, big(size_t{3} << 20));
}

TEST(ZipReader, NotAZip) {
  const std::vector<uint8_t> text = {'n', 'o', 't', ' ', 'a', ' ', 'z', 'i', 'p'};
  Result<ZipArchive> zip = ZipArchive::parse(text, "x");
  ASSERT_FALSE(zip.ok());
  EXPECT_EQ(zip.status().code(), StatusCode::kDataLoss);
  const std::vector<uint8_t> zeros(4096, 0);
  zip = ZipArchive::parse(zeros, "x");
  ASSERT_FALSE(zip.ok());
  EXPECT_NE(zip.status().message().find("end-of-central-directory"), std::string::npos);
}

// Every prefix of both archives: parse or extraction fails with DATA_LOSS (never a crash or a
// wrong success), except prefixes that still hold the whole end record (none here).
TEST(ZipReader, TruncatedArchivesFail) {
  for (const char* name : {"stored.zip", "deflated.zip"}) {
    const std::vector<uint8_t> bytes = read_fixture(name);
    for (size_t len = 0; len < bytes.size(); len += len < 256 ? 1 : 97) {
      const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(len));
      Result<ZipArchive> zip = ZipArchive::parse(cut, name);
      if (!zip.ok()) {
        EXPECT_EQ(zip.status().code(), StatusCode::kDataLoss) << zip.status().to_string();
        continue;
      }
      ADD_FAILURE() << name << " cut to " << len << " bytes parsed";
    }
  }
}

// The data of a member cut short while the directory stays whole (a download that lost its
// middle): extraction says truncated.
TEST(ZipReader, MemberDataPastTheEnd) {
  std::vector<uint8_t> bytes = read_fixture("deflated.zip");
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "deflated.zip");
  ASSERT_TRUE(zip.ok());
  ZipEntry e = *zip->find("dir/big.bin");
  e.compressed_size = bytes.size();  // claims more bytes than the archive has
  const Status s = zip->extract(e, [](std::span<const uint8_t>) { return Status::ok_status(); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
}

TEST(ZipReader, DeflateStreamEndsEarly) {
  const std::vector<uint8_t> bytes = read_fixture("deflated.zip");
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "deflated.zip");
  ASSERT_TRUE(zip.ok());
  ZipEntry e = *zip->find("dir/big.bin");
  e.compressed_size /= 2;
  const Status s = zip->extract(e, [](std::span<const uint8_t>) { return Status::ok_status(); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("ends early"), std::string::npos) << s.message();
}

TEST(ZipReader, CorruptStoredDataFailsTheCrc) {
  std::vector<uint8_t> bytes = read_fixture("stored.zip");
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "stored.zip");
  ASSERT_TRUE(zip.ok());
  const ZipEntry e = *zip->find("dir/big.bin");
  bytes[e.local_header_offset + 30 + e.name.size() + 100] ^= 0x40;  // no extra field here
  zip = ZipArchive::parse(bytes, "stored.zip");
  ASSERT_TRUE(zip.ok());
  Result<std::vector<uint8_t>> out = extract(*zip, "dir/big.bin");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(out.status().message().find("CRC-32"), std::string::npos) << out.status().message();
}

TEST(ZipReader, CorruptDeflateDataFails) {
  const std::vector<uint8_t> good = read_fixture("deflated.zip");
  Result<ZipArchive> zip = ZipArchive::parse(good, "deflated.zip");
  ASSERT_TRUE(zip.ok());
  const ZipEntry e = *zip->find("dir/big.bin");
  const size_t data = e.local_header_offset + 30 + e.name.size();
  // A single-byte flip anywhere in the stream must be caught (bad stream, wrong size, or CRC).
  for (size_t k = 0; k < e.compressed_size; k += e.compressed_size / 24 + 1) {
    std::vector<uint8_t> bytes = good;
    bytes[data + k] ^= 0x5a;
    Result<ZipArchive> z = ZipArchive::parse(bytes, "deflated.zip");
    ASSERT_TRUE(z.ok());
    const Status s =
        z->extract(*z->find("dir/big.bin"), [](std::span<const uint8_t>) { return Status(); });
    ASSERT_FALSE(s.ok()) << "flip at " << k << " went unnoticed";
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
  }
}

TEST(ZipReader, DeclaredSizeTooSmall) {
  std::vector<uint8_t> bytes = read_fixture("deflated.zip");
  const size_t rec = central_record(bytes, "dir/big.bin");
  put16(bytes, rec + 24, 1000);  // uncompressed size, low half
  put16(bytes, rec + 26, 0);
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "deflated.zip");
  ASSERT_TRUE(zip.ok());
  Result<std::vector<uint8_t>> out = extract(*zip, "dir/big.bin");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("past its declared size"), std::string::npos)
      << out.status().message();
}

TEST(ZipReader, UnsupportedMethodAndEncryption) {
  std::vector<uint8_t> bytes = read_fixture("deflated.zip");
  const size_t rec = central_record(bytes, "hello.txt");
  put16(bytes, rec + 10, 12);  // bzip2
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "deflated.zip");
  ASSERT_TRUE(zip.ok());
  Result<std::vector<uint8_t>> out = extract(*zip, "hello.txt");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(out.status().message().find("method 12"), std::string::npos);

  put16(bytes, rec + 10, 8);
  put16(bytes, rec + 8, 1);  // encrypted
  zip = ZipArchive::parse(bytes, "deflated.zip");
  ASSERT_TRUE(zip.ok());
  out = extract(*zip, "hello.txt");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("encrypted"), std::string::npos);
}

TEST(ZipReader, Zip64IsRejectedClearly) {
  std::vector<uint8_t> bytes = read_fixture("stored.zip");
  const size_t eocd = bytes.size() - 22;  // no comment in stored.zip
  ASSERT_EQ(get32(bytes, eocd), 0x06054b50u);
  put16(bytes, eocd + 16, 0xFFFF);
  put16(bytes, eocd + 18, 0xFFFF);
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "stored.zip");
  ASSERT_FALSE(zip.ok());
  EXPECT_EQ(zip.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(zip.status().message().find("ZIP64"), std::string::npos);
}

TEST(ZipReader, SinkErrorStopsExtraction) {
  const std::vector<uint8_t> bytes = read_fixture("deflated.zip");
  Result<ZipArchive> zip = ZipArchive::parse(bytes, "deflated.zip");
  ASSERT_TRUE(zip.ok());
  int calls = 0;
  const Status s = zip->extract(*zip->find("dir/big.bin"), [&](std::span<const uint8_t>) {
    ++calls;
    return io_error("disk full");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace geniex::cli
