// GgufStreamWriter: the same file as GgufWriter's, and no scratch or partial file left behind
// when a tensor is refused or finish() is never reached.
#include "gguf/gguf_stream_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace geniex::gguf {
namespace {

std::vector<uint8_t> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(GgufStreamWriter, WritesTheSameFileAsGgufWriter) {
  const auto dir = std::filesystem::temp_directory_path() / "geniex_stream_writer_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  GgufWriter mem;
  mem.set("general.architecture", Value::of_string("llama"));
  mem.set("x.count", Value::of_uint(ValueType::kUint32, 7));
  auto sw = GgufStreamWriter::create((dir / "s.gguf").string());
  ASSERT_TRUE(sw.ok());
  const std::vector<uint8_t> a(12 * 4, 3), b(5 * 2, 9);  // F32 [3,4], F16 [5] (padding)
  ASSERT_TRUE(mem.add_tensor("a", GgmlType::kF32, {3, 4}, a).ok());
  ASSERT_TRUE(mem.add_tensor("b", GgmlType::kF16, {5}, b).ok());
  ASSERT_TRUE(sw->add_tensor("a", GgmlType::kF32, {3, 4}, a).ok());
  ASSERT_TRUE(sw->add_tensor("b", GgmlType::kF16, {5}, b).ok());
  EXPECT_FALSE(sw->add_tensor("a", GgmlType::kF32, {1}, std::vector<uint8_t>(4)).ok());
  EXPECT_FALSE(sw->add_tensor("c", GgmlType::kF32, {2}, std::vector<uint8_t>(4)).ok());
  ASSERT_TRUE(sw->finish(mem.metadata()).ok());
  ASSERT_TRUE(mem.write((dir / "m.gguf").string()).ok());
  EXPECT_EQ(read_all(dir / "s.gguf"), read_all(dir / "m.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir / "s.gguf.data.tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "s.gguf.tmp"));
  {
    auto dropped = GgufStreamWriter::create((dir / "d.gguf").string());
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE(dropped->add_tensor("a", GgmlType::kF32, {3, 4}, a).ok());
    EXPECT_TRUE(std::filesystem::exists(dir / "d.gguf.data.tmp"));
  }  // never finished: nothing stays
  EXPECT_FALSE(std::filesystem::exists(dir / "d.gguf.data.tmp"));
  EXPECT_FALSE(std::filesystem::exists(dir / "d.gguf"));
  auto nowhere = GgufStreamWriter::create((dir / "no" / "such" / "x.gguf").string());
  EXPECT_FALSE(nowhere.ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace geniex::gguf
