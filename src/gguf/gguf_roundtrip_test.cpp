// reader(writer(x)) == x for every value type, array kind and a range of tensor types.
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <string>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace geniex::gguf {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31);
  return v;
}

std::vector<KeyValue> sample_metadata() {
  return {
      {"general.architecture", Value::of_string("llama")},
      {"u8", Value::of_uint(ValueType::kUint8, 255)},
      {"i8", Value::of_int(ValueType::kInt8, -128)},
      {"u16", Value::of_uint(ValueType::kUint16, 65535)},
      {"i16", Value::of_int(ValueType::kInt16, -32768)},
      {"u32", Value::of_uint(ValueType::kUint32, 4000000000u)},
      {"i32", Value::of_int(ValueType::kInt32, -2000000000)},
      {"u64", Value::of_uint(ValueType::kUint64, 18000000000000000000ull)},
      {"i64", Value::of_int(ValueType::kInt64, -9000000000000000000ll)},
      {"f32", Value::of_float(ValueType::kFloat32, 0.1)},
      {"f64", Value::of_float(ValueType::kFloat64, 0.1)},
      {"bool", Value::of_bool(true)},
      {"empty_string", Value::of_string("")},
      {"utf8", Value::of_string("h\xc3\xa9llo \xf0\x9f\x98\x80\n")},
      {"tokens", Value::of_string_array({"<s>", "</s>", "", "\xe2\x96\x81the"})},
      {"scores", Value::of_float_array(ValueType::kFloat32, {0.0, -1.5, 3.25})},
      {"f64s", Value::of_float_array(ValueType::kFloat64, {1e300, -0.0})},
      {"types", Value::of_int_array(ValueType::kInt32, {1, 2, 3, -4})},
      {"u8s", Value::of_uint_array(ValueType::kUint8, {0, 1, 255})},
      {"u64s", Value::of_uint_array(ValueType::kUint64, {})},
      {"bools", Value::of_bool_array({true, false, true})},
      {"i16s", Value::of_int_array(ValueType::kInt16, {-1, 7})},
  };
}

TEST(GgufRoundTrip, MetadataAndTensors) {
  GgufWriter w;
  for (const auto& kv : sample_metadata()) w.set(kv.key, kv.value);
  struct T {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
  };
  const std::vector<T> ts = {{"token_embd.weight", GgmlType::kQ4_K, {256, 3}},
                             {"blk.0.attn_norm.weight", GgmlType::kF32, {7}},
                             {"blk.0.ffn_up.weight", GgmlType::kQ8_0, {64, 5, 2}},
                             {"output.weight", GgmlType::kF16, {3, 1, 1, 2}}};
  std::vector<std::vector<uint8_t>> datas;
  for (size_t i = 0; i < ts.size(); ++i) {
    const uint64_t n =
        std::accumulate(ts[i].ne.begin(), ts[i].ne.end(), uint64_t{1}, std::multiplies<>());
    const auto& tt = traits(ts[i].type);
    datas.push_back(pattern(n / tt.block_size * tt.type_size, static_cast<uint8_t>(i)));
    ASSERT_TRUE(w.add_tensor(ts[i].name, ts[i].type, ts[i].ne, datas.back()).ok());
  }
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto f = GgufFile::parse(*bytes, "mem");
  ASSERT_TRUE(f.ok()) << f.status().to_string();

  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  EXPECT_EQ(f->metadata(), sample_metadata());
  ASSERT_EQ(f->tensors().size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    const TensorInfo& ti = f->tensors()[i];
    EXPECT_EQ(ti.name, ts[i].name);
    EXPECT_EQ(ti.type, ts[i].type);
    EXPECT_EQ(ti.n_dims, ts[i].ne.size());
    for (size_t d = 0; d < ts[i].ne.size(); ++d) EXPECT_EQ(ti.ne[d], ts[i].ne[d]);
    EXPECT_EQ(ti.offset % 32, 0u);
    ASSERT_EQ(ti.data.size(), datas[i].size());
    EXPECT_TRUE(std::equal(ti.data.begin(), ti.data.end(), datas[i].begin()));
    EXPECT_EQ(f->find_tensor(ts[i].name), &ti);
  }
  // Writing what was read gives the same bytes.
  GgufWriter w2;
  for (const auto& kv : f->metadata()) w2.set(kv.key, kv.value);
  for (const auto& ti : f->tensors()) {
    ASSERT_TRUE(
        w2.add_tensor(ti.name, ti.type, {ti.ne.begin(), ti.ne.begin() + ti.n_dims}, ti.data).ok());
  }
  auto bytes2 = w2.to_bytes();
  ASSERT_TRUE(bytes2.ok());
  EXPECT_EQ(*bytes2, *bytes);
}

TEST(GgufRoundTrip, CustomAlignmentAndFile) {
  GgufWriter w;
  w.set("general.alignment", Value::of_uint(ValueType::kUint32, 64));
  const auto d1 = pattern(4 * 5, 1);
  const auto d2 = pattern(18, 2);
  ASSERT_TRUE(w.add_tensor("a", GgmlType::kF32, {5}, d1).ok());
  ASSERT_TRUE(w.add_tensor("b", GgmlType::kQ4_0, {32}, d2).ok());
  const std::string path = ::testing::TempDir() + "/geniex_roundtrip.gguf";
  ASSERT_TRUE(w.write(path).ok());
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->tensors()[1].offset, 64u);
  EXPECT_EQ(f->file_size(), f->data_offset() + 128);
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, VocabOnlyFileHasNoPadding) {
  GgufWriter w;
  w.set("k", Value::of_string("abc"));
  auto b = w.to_bytes();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 24u + 8 + 1 + 4 + 8 + 3);
  auto f = GgufFile::parse(*b, "mem");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufAccessors, WidenIntegersAndNameErrors) {
  GgufWriter w;
  w.set("ctx", Value::of_uint(ValueType::kUint32, 8192));
  w.set("neg", Value::of_int(ValueType::kInt32, -3));
  w.set("heads", Value::of_int_array(ValueType::kInt32, {4, 0, 4}));
  w.set("eps", Value::of_float(ValueType::kFloat32, 1e-6));
  w.set("name", Value::of_string("x"));
  auto b = w.to_bytes();
  ASSERT_TRUE(b.ok());
  auto f = GgufFile::parse(*b, "model.gguf");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->get_uint("ctx"), 8192u);
  EXPECT_EQ(*f->get_int("ctx"), 8192);
  EXPECT_EQ(*f->get_int("neg"), -3);
  EXPECT_FALSE(f->get_uint("neg").ok());
  EXPECT_EQ(*f->get_int_array("heads"), (std::vector<int64_t>{4, 0, 4}));
  EXPECT_FLOAT_EQ(static_cast<float>(*f->get_float("eps")), 1e-6f);
  EXPECT_EQ(*f->get_uint_or("absent", 7), 7u);
  auto missing = f->get_uint("absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("model.gguf"), std::string::npos);
  EXPECT_NE(missing.status().message().find("absent"), std::string::npos);
  auto wrong = f->get_uint("name");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("STRING"), std::string::npos);
}

TEST(GgufWriter, RejectsBadTensors) {
  GgufWriter w;
  const auto d = pattern(18, 0);
  EXPECT_FALSE(w.add_tensor("x", GgmlType::kQ4_0, {33}, d).ok());  // not a block multiple
  EXPECT_FALSE(w.add_tensor("x", GgmlType::kQ4_0, {64}, d).ok());  // wrong byte count
  EXPECT_TRUE(w.add_tensor("x", GgmlType::kQ4_0, {32}, d).ok());
  EXPECT_FALSE(w.add_tensor("x", GgmlType::kQ4_0, {32}, d).ok());  // duplicate
  EXPECT_FALSE(w.add_tensor(std::string(64, 'n'), GgmlType::kQ4_0, {32}, d).ok());
}

}  // namespace
}  // namespace geniex::gguf
