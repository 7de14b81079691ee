#include "eval/kld_base_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

namespace geniex::eval {
namespace {

constexpr int64_t kHeaderBytes = 8 + 3 * 4;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

int64_t kld_file_bytes(int64_t n_ctx, int64_t n_vocab, int64_t n_chunk) {
  return kHeaderBytes + 4 * n_ctx * n_chunk +
         2 * row_words(n_vocab) * scored_per_chunk(n_ctx) * n_chunk;
}

double encode_log_probs(std::span<const float> logits, int32_t token, std::span<uint16_t> row) {
  const size_t n = logits.size();
  float max_logit = logits[0];
  float min_logit = logits[0];
  for (size_t i = 1; i < n; ++i) {
    max_logit = std::max(max_logit, logits[i]);
    min_logit = std::min(min_logit, logits[i]);
  }
  // Probabilities below e^-16 of the top one are not worth 16 bits: they all become code 0.
  min_logit = std::max(min_logit, max_logit - 16.0f);
  double sum_exp = 0.0;
  for (size_t i = 0; i < n; ++i) sum_exp += std::exp(logits[i] - max_logit);
  const auto log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.0f;
  std::memcpy(row.data(), &scale, sizeof(float));
  std::memcpy(row.data() + 2, &min_log_prob, sizeof(float));
  uint16_t* codes = row.data() + 4;
  std::fill(codes, row.data() + row.size(), uint16_t{0});
  if (scale != 0.0f) {
    const float inv_scale = 1.0f / scale;
    for (size_t i = 0; i < n; ++i) {
      if (logits[i] > min_logit) {
        // Round half to even, as the reference's float trick does.
        codes[i] = static_cast<uint16_t>(std::nearbyint(inv_scale * (logits[i] - min_logit)));
      }
    }
  }
  return max_logit + log_sum_exp - logits[static_cast<size_t>(token)];
}

Result<KldBaseReader> KldBaseReader::open(const std::string& path) {
  auto mf = MappedFile::open(path);
  if (!mf.ok()) return mf.status();
  auto file = std::make_shared<MappedFile>(std::move(mf).value());
  GENIEX_ASSIGN_OR_RETURN(KldBaseReader r, parse(file->bytes(), path));
  r.file_ = std::move(file);
  return r;
}

Result<KldBaseReader> KldBaseReader::parse(std::span<const uint8_t> bytes,
                                           const std::string& source) {
  KldBaseReader r;
  const std::string name = "KL-divergence base file " + source;
  if (bytes.size() < static_cast<size_t>(kHeaderBytes) ||
      std::memcmp(bytes.data(), kKldMagic, sizeof(kKldMagic)) != 0) {
    return data_loss(name + " is not a log-probability file (no \"_logits_\" header)");
  }
  const auto n_ctx = load<uint32_t>(bytes.data() + 8);
  const auto n_vocab = load<int32_t>(bytes.data() + 12);
  const auto n_chunk = load<int32_t>(bytes.data() + 16);
  if (n_ctx < 4 || n_ctx > (1u << 24) || n_vocab < 1 || n_vocab > (1 << 24) || n_chunk < 1 ||
      n_chunk > (1 << 24)) {
    return data_loss(name + " has impossible dimensions: n_ctx " + std::to_string(n_ctx) +
                     ", n_vocab " + std::to_string(n_vocab) + ", chunks " +
                     std::to_string(n_chunk));
  }
  // The header's three fields may multiply past 2^63: estimate in double first.
  const double approx = 20.0 + 4.0 * n_ctx * n_chunk +
                        2.0 * static_cast<double>(row_words(n_vocab)) *
                            static_cast<double>(scored_per_chunk(n_ctx)) * n_chunk;
  const int64_t want = approx > 4e18 ? INT64_MAX : kld_file_bytes(n_ctx, n_vocab, n_chunk);
  if (static_cast<int64_t>(bytes.size()) != want) {
    return data_loss(name + " is " + std::to_string(bytes.size()) + " bytes but its header (" +
                     std::to_string(n_chunk) + " chunks of " + std::to_string(n_ctx) +
                     " tokens, vocabulary " + std::to_string(n_vocab) + ") needs " +
                     std::to_string(want) +
                     (static_cast<int64_t>(bytes.size()) < want ? ": truncated" : ""));
  }
  r.n_ctx_ = static_cast<int32_t>(n_ctx);
  r.n_vocab_ = n_vocab;
  r.n_chunk_ = n_chunk;
  const size_t n_tok = static_cast<size_t>(n_ctx) * static_cast<size_t>(n_chunk);
  r.tokens_.resize(n_tok);
  std::memcpy(r.tokens_.data(), bytes.data() + kHeaderBytes, n_tok * sizeof(int32_t));
  r.rows_ = bytes.data() + kHeaderBytes + 4 * static_cast<int64_t>(n_tok);
  return r;
}

std::span<const int32_t> KldBaseReader::chunk_tokens(int32_t c) const {
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(c) * n_ctx_,
                                                   static_cast<size_t>(n_ctx_));
}

std::span<const uint16_t> KldBaseReader::row(int32_t c, int64_t i) const {
  const int64_t words = row_words(n_vocab_);
  const int64_t index = static_cast<int64_t>(c) * scored_per_chunk(n_ctx_) + i;
  // Rows start at an even offset (the header and tokens are whole 32-bit words).
  const auto* p = reinterpret_cast<const uint16_t*>(rows_ + 2 * words * index);
  return {p, static_cast<size_t>(words)};
}

Result<std::unique_ptr<KldBaseWriter>> KldBaseWriter::create(const std::string& path, int32_t n_ctx,
                                                             int32_t n_vocab, int32_t n_chunk,
                                                             std::span<const int32_t> tokens) {
  if (static_cast<int64_t>(tokens.size()) != static_cast<int64_t>(n_ctx) * n_chunk) {
    return invalid_argument("KL-divergence base file: " + std::to_string(tokens.size()) +
                            " tokens for " + std::to_string(n_chunk) + " chunks of " +
                            std::to_string(n_ctx));
  }
  std::unique_ptr<KldBaseWriter> w(new KldBaseWriter());
  w->path_ = path;
  w->tmp_ = path + ".part-" + std::to_string(::getpid());
  w->f_ = std::fopen(w->tmp_.c_str(), "wb");
  if (w->f_ == nullptr) {
    return io_error("cannot create " + w->tmp_ + ": " + std::strerror(errno));
  }
  const auto ctx = static_cast<uint32_t>(n_ctx);
  bool ok = std::fwrite(kKldMagic, 1, sizeof(kKldMagic), w->f_) == sizeof(kKldMagic);
  ok = ok && std::fwrite(&ctx, sizeof(ctx), 1, w->f_) == 1;
  ok = ok && std::fwrite(&n_vocab, sizeof(n_vocab), 1, w->f_) == 1;
  ok = ok && std::fwrite(&n_chunk, sizeof(n_chunk), 1, w->f_) == 1;
  ok = ok && std::fwrite(tokens.data(), sizeof(int32_t), tokens.size(), w->f_) == tokens.size();
  if (!ok) return io_error("cannot write " + w->tmp_ + ": " + std::strerror(errno));
  w->words_left_ = row_words(n_vocab) * scored_per_chunk(n_ctx) * n_chunk;
  return w;
}

KldBaseWriter::~KldBaseWriter() {
  if (f_ != nullptr) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

Status KldBaseWriter::append(std::span<const uint16_t> rows) {
  if (f_ == nullptr) return internal_error("KL-divergence base file already finished");
  if (static_cast<int64_t>(rows.size()) > words_left_) {
    return internal_error("KL-divergence base file: more rows than its header announced");
  }
  if (std::fwrite(rows.data(), sizeof(uint16_t), rows.size(), f_) != rows.size()) {
    return io_error("cannot write " + tmp_ + ": " + std::strerror(errno));
  }
  words_left_ -= static_cast<int64_t>(rows.size());
  return {};
}

Status KldBaseWriter::finish() {
  if (f_ == nullptr) return internal_error("KL-divergence base file already finished");
  if (words_left_ != 0) {
    return internal_error("KL-divergence base file: " + std::to_string(words_left_) +
                          " row words missing");
  }
  const bool flushed = std::fflush(f_) == 0 && ::fsync(fileno(f_)) == 0;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!flushed || !closed || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp_.c_str());
    return io_error("cannot write " + path_ + ": " + err);
  }
  return {};
}

}  // namespace geniex::eval
