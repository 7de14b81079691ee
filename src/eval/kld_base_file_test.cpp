#include "eval/kld_base_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

namespace geniex::eval {
namespace {

namespace fs = std::filesystem;

std::vector<float> random_logits(size_t n, uint32_t seed, float spread = 4.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<double> log_softmax(const std::vector<float>& l) {
  double m = l[0];
  for (float x : l) m = std::max<double>(m, x);
  double s = 0;
  for (float x : l) s += std::exp(x - m);
  std::vector<double> out(l.size());
  for (size_t i = 0; i < l.size(); ++i) out[i] = l[i] - m - std::log(s);
  return out;
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("geniex_kld_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(KldBaseFile, RowWordsMatchTheReferenceLayout) {
  EXPECT_EQ(row_words(262144), 262148);
  EXPECT_EQ(row_words(2047), 2052);  // odd vocabularies are padded to an even code count
  EXPECT_EQ(scored_per_chunk(512), 255);
  EXPECT_EQ(scored_per_chunk(5), 2);
  EXPECT_EQ(kld_file_bytes(512, 2048, 3), 20 + 4 * 512 * 3 + 2 * 2052 * 255 * 3);
}

TEST(KldBaseFile, EncodedRowsDecodeToTheLogProbabilities) {
  for (size_t n : {size_t{7}, size_t{2048}, size_t{2049}}) {
    const auto logits = random_logits(n, 17 + static_cast<uint32_t>(n));
    std::vector<uint16_t> row(static_cast<size_t>(row_words(static_cast<int64_t>(n))), 0xffff);
    const double nll = encode_log_probs(logits, 3, row);
    const auto ref = log_softmax(logits);
    EXPECT_NEAR(nll, -ref[3], 1e-5);
    float scale = 0, min_lp = 0;
    std::memcpy(&scale, row.data(), 4);
    std::memcpy(&min_lp, row.data() + 2, 4);
    EXPECT_GT(scale, 0.0f);
    for (size_t i = 0; i < n; ++i) {
      const double lp = scale * row[4 + i] + min_lp;
      if (ref[i] > min_lp) {
        EXPECT_NEAR(lp, ref[i], scale * 0.51 + 1e-5) << "n=" << n << " i=" << i;
      } else {
        EXPECT_EQ(row[4 + i], 0) << "below the floor: code 0";
      }
    }
    if (n % 2 == 1) {
      EXPECT_EQ(row.back(), 0) << "padding word is zero";
    }
  }
}

TEST(KldBaseFile, FlatLogitsGiveAZeroScale) {
  const std::vector<float> logits(8, 1.5f);
  std::vector<uint16_t> row(static_cast<size_t>(row_words(8)), 7);
  const double nll = encode_log_probs(logits, 0, row);
  EXPECT_NEAR(nll, std::log(8.0), 1e-6);
  float scale = 1;
  std::memcpy(&scale, row.data(), 4);
  EXPECT_EQ(scale, 0.0f);
  for (size_t i = 4; i < row.size(); ++i) EXPECT_EQ(row[i], 0);
}

TEST(KldBaseFile, WriteThenReadRoundTrips) {
  TempDir dir;
  const int32_t n_ctx = 8, n_vocab = 5, n_chunk = 2;
  std::vector<int32_t> tokens(16);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i % 5);
  const std::string path = dir.file("base.kld");
  auto w = KldBaseWriter::create(path, n_ctx, n_vocab, n_chunk, tokens);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  const auto words = static_cast<size_t>(row_words(n_vocab));
  std::vector<uint16_t> rows(words * scored_per_chunk(n_ctx) * n_chunk);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint16_t>(i * 7);
  EXPECT_FALSE(fs::exists(path)) << "nothing at the final name before finish()";
  ASSERT_TRUE((*w)->append(std::span(rows).first(rows.size() / 2)).ok());
  ASSERT_TRUE((*w)->append(std::span(rows).subspan(rows.size() / 2)).ok());
  ASSERT_TRUE((*w)->finish().ok());
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), kld_file_bytes(n_ctx, n_vocab, n_chunk));

  auto r = KldBaseReader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->n_ctx(), n_ctx);
  EXPECT_EQ(r->n_vocab(), n_vocab);
  EXPECT_EQ(r->n_chunk(), n_chunk);
  EXPECT_EQ(r->chunk_tokens(1)[0], tokens[8]);
  const auto row = r->row(1, 2);
  ASSERT_EQ(row.size(), words);
  EXPECT_EQ(row[0], rows[words * (3 + 2)]);
  // Only the final file remains.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(KldBaseFile, AnUnfinishedWriterLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("base.kld");
  {
    std::vector<int32_t> tokens(8, 1);
    auto w = KldBaseWriter::create(path, 8, 4, 1, tokens);
    ASSERT_TRUE(w.ok());
    std::vector<uint16_t> row(static_cast<size_t>(row_words(4)), 1);
    ASSERT_TRUE((*w)->append(row).ok());
    EXPECT_FALSE((*w)->finish().ok()) << "rows missing";
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(KldBaseFile, BadFilesAreRefusedWithTheirCause) {
  TempDir dir;
  const std::string path = dir.file("base.kld");
  std::vector<int32_t> tokens(8 * 2, 1);
  auto w = KldBaseWriter::create(path, 8, 4, 2, tokens);
  ASSERT_TRUE(w.ok());
  std::vector<uint16_t> rows(static_cast<size_t>(row_words(4) * scored_per_chunk(8) * 2), 3);
  ASSERT_TRUE((*w)->append(rows).ok());
  ASSERT_TRUE((*w)->finish().ok());
  std::vector<char> good(fs::file_size(path));
  std::ifstream(path, std::ios::binary)
      .read(good.data(), static_cast<std::streamsize>(good.size()));

  auto write = [&](const std::string& name, const std::vector<char>& bytes) {
    std::ofstream(dir.file(name), std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return dir.file(name);
  };
  auto truncated = good;
  truncated.resize(good.size() - 3);
  auto r = KldBaseReader::open(write("trunc", truncated));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();

  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(KldBaseReader::open(write("long", longer)).status().code(), StatusCode::kDataLoss);

  auto magic = good;
  magic[0] = 'X';
  r = KldBaseReader::open(write("magic", magic));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("_logits_"), std::string::npos);

  auto dims = good;
  const int32_t neg = -5;
  std::memcpy(dims.data() + 12, &neg, 4);
  r = KldBaseReader::open(write("dims", dims));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("impossible"), std::string::npos);

  auto huge = good;  // dimensions whose product overflows 64 bits
  const int32_t big = 1 << 24;
  std::memcpy(huge.data() + 8, &big, 4);
  std::memcpy(huge.data() + 12, &big, 4);
  std::memcpy(huge.data() + 16, &big, 4);
  r = KldBaseReader::open(write("huge", huge));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);

  EXPECT_FALSE(KldBaseReader::open(write("empty", {})).ok());
  EXPECT_EQ(KldBaseReader::open(dir.file("missing")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace geniex::eval
