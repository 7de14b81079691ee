// Tokenizer: text <-> token ids for the vocabularies llama.cpp GGUF files carry (SPM "llama",
// byte-level BPE "gpt2", WordPiece "bert"), matching llama.cpp's llama_tokenize /
// llama_detokenize. Immutable once built: every const method may be called from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/vocab.h"

namespace geniex::tokenizer {

struct EncodeOptions {
  /// Add the vocabulary's automatic specials (BOS / EOS / BERT's [CLS] ... [SEP]) as the
  /// GGUF's add_bos/add_eos/add_sep flags say.
  bool add_special = true;
  /// Turn CONTROL-token text written in the input (e.g. "<|im_end|>") into its id. Off: such
  /// text is tokenized as ordinary characters. USER_DEFINED added tokens are matched always.
  bool parse_special = false;
};

struct DecodeOptions {
  /// Drop a leading BOS / trailing EOS that the vocabulary adds automatically (llama.cpp's
  /// remove_special); with a leading BOS dropped, the SPM leading space is kept.
  bool remove_special = false;
  /// Print CONTROL / UNKNOWN tokens' text; off: they produce no text (HF's
  /// skip_special_tokens=True). USER_DEFINED tokens always print their text.
  bool render_special = false;
};

class StreamDecoder;

class Tokenizer {
 public:
  /// Builds the tokenizer from a GGUF file's `tokenizer.*` metadata (the file may be closed
  /// afterwards). Errors name the offending key.
  static Result<std::shared_ptr<const Tokenizer>> from_gguf(const gguf::GgufFile& file);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  /// Text -> ids. kInvalidArgument when `text` is not valid UTF-8.
  [[nodiscard]] Result<std::vector<int32_t>> encode(std::string_view text,
                                                    EncodeOptions opts = {}) const;
  /// Ids -> text (bytes of byte tokens are concatenated, so the result may be invalid UTF-8
  /// only if the ids themselves spell invalid UTF-8). kOutOfRange for an id outside the vocab.
  [[nodiscard]] Result<std::string> decode(std::span<const int32_t> ids,
                                           DecodeOptions opts = {}) const;
  /// A decoder that emits text incrementally, one id at a time.
  [[nodiscard]] StreamDecoder stream_decoder(DecodeOptions opts = {}) const;

  /// The text one token stands for (▁ -> space, byte-level characters -> bytes, <0xNN> -> the
  /// byte). CONTROL/UNKNOWN tokens give their text only when `render_special`. "" for an id
  /// outside the vocabulary.
  [[nodiscard]] std::string token_to_piece(int32_t id, bool render_special = true) const;
  /// The token's text as stored in the vocabulary ("" when out of range).
  [[nodiscard]] const std::string& token_text(int32_t id) const;
  /// TokenAttr bits (0 when out of range).
  [[nodiscard]] uint32_t token_attr(int32_t id) const;
  /// The id whose stored text is exactly `text`.
  [[nodiscard]] std::optional<int32_t> find_token(std::string_view text) const;

  [[nodiscard]] bool is_eog(int32_t id) const;
  [[nodiscard]] bool is_control(int32_t id) const { return (token_attr(id) & kAttrControl) != 0; }
  [[nodiscard]] const std::vector<int32_t>& eog_ids() const { return vocab_.eog; }

  // Special ids, kNoToken (-1) when the vocabulary has none.
  [[nodiscard]] int32_t bos() const { return vocab_.bos; }
  [[nodiscard]] int32_t eos() const { return vocab_.eos; }
  [[nodiscard]] int32_t eot() const { return vocab_.eot; }
  [[nodiscard]] int32_t eom() const { return vocab_.eom; }
  [[nodiscard]] int32_t unk() const { return vocab_.unk; }
  [[nodiscard]] int32_t sep() const { return vocab_.sep; }
  [[nodiscard]] int32_t pad() const { return vocab_.pad; }
  [[nodiscard]] bool add_bos() const { return vocab_.add_bos; }
  [[nodiscard]] bool add_eos() const { return vocab_.add_eos; }

  [[nodiscard]] int32_t n_vocab() const { return vocab_.n_vocab(); }
  [[nodiscard]] VocabType type() const { return vocab_.type; }
  /// tokenizer.ggml.model / tokenizer.ggml.pre as read ("default" when pre is absent).
  [[nodiscard]] const std::string& model_name() const { return vocab_.model; }
  [[nodiscard]] const std::string& pre_name() const { return vocab_.pre; }
  [[nodiscard]] const Vocab& vocab() const { return vocab_; }

 private:
  friend class StreamDecoder;
  struct Impl;
  Tokenizer(Vocab vocab, std::unique_ptr<Impl> impl);

  // Appends the piece of `id` (valid) to `out`, dropping one leading space when `lstrip`.
  void append_piece(std::string& out, int32_t id, bool lstrip, bool render_special) const;

  Vocab vocab_;
  std::unique_ptr<Impl> impl_;
};

/// Incremental detokenization for streaming generation. Feed ids one at a time; each call
/// returns the text that is now final: only whole UTF-8 characters, and (when the vocabulary
/// cleans up spaces) nothing a later token could still change. The concatenation of every
/// feed() result and the final flush() equals Tokenizer::decode() of all the ids.
/// Not thread-safe (one per stream); the Tokenizer must outlive it.
class StreamDecoder {
 public:
  StreamDecoder(const Tokenizer& tok, DecodeOptions opts);

  /// kOutOfRange for an id outside the vocabulary (the decoder state is unchanged).
  [[nodiscard]] Result<std::string> feed(int32_t id);
  /// Everything still held back; the decoder is then reset for a new sequence.
  [[nodiscard]] std::string flush();
  void reset();

 private:
  void push_piece(int32_t id);
  std::string take_ready(bool final);

  const Tokenizer* tok_;
  DecodeOptions opts_;
  size_t n_fed_ = 0;            // ids accepted so far
  bool remove_space_ = false;   // strip one leading space from the next piece
  bool held_eos_ = false;       // a possibly-final EOS not rendered yet
  std::string pending_;         // raw (pre-clean-up) text not emitted yet
  char prev1_ = 0, prev2_ = 0;  // last two raw bytes already emitted (prev1_ is the last)
};

}  // namespace geniex::tokenizer
