// llama.cpp's KL-divergence base file (`llama-perplexity --kl-divergence-base`): the token
// chunks of a perplexity run and, for every scored position, the base model's log-probabilities
// over the whole vocabulary, 16 bits each. We read and write the same bytes, so a base file made
// by either tool is read by the other.
//
// Layout (little-endian):
//   "_logits_"                        8 bytes
//   uint32 n_ctx, int32 n_vocab, int32 n_chunk
//   int32 tokens[n_ctx * n_chunk]     the evaluated tokens (BOS substitution not applied)
//   per chunk, per scored position (n_ctx - 1 - n_ctx/2 of them): one row of row_words(n_vocab)
//   uint16 words: float scale, float min_log_prob, then n_vocab codes (padded to an even count);
//   log p(i) = scale * code[i] + min_log_prob (code 0 stands for anything at or below the
//   floor, which is at most 16 nats under the top logit).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"

namespace geniex::eval {

inline constexpr char kKldMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

/// uint16 words per stored row: 2 floats + n_vocab codes rounded up to an even count.
[[nodiscard]] constexpr int64_t row_words(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }
/// Positions scored per chunk of n_ctx tokens: predictions of tokens n_ctx/2+1 .. n_ctx-1.
[[nodiscard]] constexpr int64_t scored_per_chunk(int64_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }
/// The whole file's size for these dimensions.
[[nodiscard]] int64_t kld_file_bytes(int64_t n_ctx, int64_t n_vocab, int64_t n_chunk);

/// Encodes one row of logits as llama.cpp stores it (`row` has row_words(logits.size())
/// words). Returns the negative log-likelihood of `token` computed on the way.
double encode_log_probs(std::span<const float> logits, int32_t token, std::span<uint16_t> row);

/// A base file opened for reading: the header and tokens are checked and kept; rows are read
/// in place from the mapping.
class KldBaseReader {
 public:
  /// kNotFound / kIoError if the file cannot be opened; kDataLoss for a file that is not a
  /// base file, has impossible dimensions, or is shorter or longer than its header says.
  static Result<KldBaseReader> open(const std::string& path);
  /// The same checks over bytes the caller keeps alive for the reader's lifetime; `name` is
  /// used in messages.
  static Result<KldBaseReader> parse(std::span<const uint8_t> bytes, const std::string& name);

  [[nodiscard]] int32_t n_ctx() const { return n_ctx_; }
  [[nodiscard]] int32_t n_vocab() const { return n_vocab_; }
  [[nodiscard]] int32_t n_chunk() const { return n_chunk_; }
  /// The tokens of chunk `c` (n_ctx of them).
  [[nodiscard]] std::span<const int32_t> chunk_tokens(int32_t c) const;
  /// Stored row `i` (0 .. scored_per_chunk - 1) of chunk `c`.
  [[nodiscard]] std::span<const uint16_t> row(int32_t c, int64_t i) const;

 private:
  KldBaseReader() = default;
  std::shared_ptr<MappedFile> file_;
  int32_t n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
  std::vector<int32_t> tokens_;
  const uint8_t* rows_ = nullptr;
};

/// Writes a base file to a temporary name beside `path` and renames it into place in
/// finish(): a run that fails or is interrupted leaves no partial file behind.
class KldBaseWriter {
 public:
  /// Writes the header and the tokens (n_ctx * n_chunk of them).
  static Result<std::unique_ptr<KldBaseWriter>> create(const std::string& path, int32_t n_ctx,
                                                       int32_t n_vocab, int32_t n_chunk,
                                                       std::span<const int32_t> tokens);
  ~KldBaseWriter();
  KldBaseWriter(const KldBaseWriter&) = delete;
  KldBaseWriter& operator=(const KldBaseWriter&) = delete;

  /// Appends encoded rows (a multiple of row_words(n_vocab) words).
  Status append(std::span<const uint16_t> rows);
  /// Checks the row count, flushes and renames the file into place.
  Status finish();

 private:
  KldBaseWriter() = default;
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  int64_t words_left_ = 0;
};

}  // namespace geniex::eval
