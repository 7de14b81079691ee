// Vocabulary loaded from a GGUF file's `tokenizer.*` metadata: token texts, scores, attributes,
// BPE merge ranks, special ids and the per-family flags. Validated on load; immutable after.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/pretokenizer.h"

namespace geniex::tokenizer {

inline constexpr int32_t kNoToken = -1;

/// Algorithm family (`tokenizer.ggml.model`).
enum class VocabType { kSpm, kBpe, kWpm };

/// `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

/// Token attribute bits (llama.cpp's llama_token_attr).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 7,
  kAttrRstrip = 1u << 8,
};

struct Vocab {
  VocabType type = VocabType::kSpm;
  std::string model;  ///< tokenizer.ggml.model as written
  std::string pre;    ///< tokenizer.ggml.pre ("default" when absent)

  std::vector<std::string> text;  ///< id -> token text (as stored)
  std::vector<float> score;       ///< id -> score (0 when absent)
  std::vector<uint32_t> attr;     ///< id -> TokenAttr bits
  /// text -> id (first id wins): open addressing over (hash, id), texts compared in `text`.
  class TextIndex {
   public:
    void build(const std::vector<std::string>& texts);
    [[nodiscard]] int32_t find(const std::vector<std::string>& texts, std::string_view s) const;

   private:
    struct Slot {
      uint32_t hash = 0;
      int32_t id = -1;
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
  };
  TextIndex to_id;
  size_t max_token_len = 0;  ///< longest token text, bytes

  /// BPE: (left id, right id) -> (rank, merged id).
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  /// Open-addressing hash map keyed by pair_key(); the hot lookup of BPE merging.
  class MergeMap {
   public:
    void reserve(size_t n);
    /// Keeps the first (lowest-rank) entry for a key.
    void insert(uint64_t key, Merge m);
    [[nodiscard]] const Merge* find(uint64_t key) const {
      if (slots_.empty()) return nullptr;
      for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.key == key) return &s.merge;
        if (s.key == kEmpty) return nullptr;
      }
    }
    [[nodiscard]] size_t size() const { return size_; }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    struct Slot {
      uint64_t key = kEmpty;
      Merge merge{};
    };
    static size_t hash(uint64_t k) {
      k ^= k >> 29;
      k *= 0xbf58476d1ce4e5b9ULL;
      k ^= k >> 32;
      return static_cast<size_t>(k);
    }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
  };
  MergeMap merges;
  /// BPE: token id of each byte's GPT-2 character (kNoToken when the vocab lacks it).
  std::vector<int32_t> byte_token;
  /// SPM: code points X such that "X▁" occurs inside some token; a symbol sequence can be cut
  /// before any other "▁" without changing the result (no token spans such a cut).
  std::vector<uint32_t> spm_joins_before_space;

  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken,
          sep = kNoToken, pad = kNoToken, cls = kNoToken, mask = kNoToken;
  int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken, fim_pad = kNoToken,
          fim_rep = kNoToken, fim_sep = kNoToken;
  std::vector<int32_t> eog;  ///< sorted end-of-generation ids

  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;
  bool ignore_merges = false;
  bool clean_spaces = false;
  bool lowercase = true;      ///< WPM normalizer
  bool strip_accents = true;  ///< WPM normalizer

  /// CONTROL / USER_DEFINED / UNKNOWN ids, longest text first (ties: lower id first).
  std::vector<int32_t> special_candidates;

  [[nodiscard]] int32_t n_vocab() const { return static_cast<int32_t>(text.size()); }
  [[nodiscard]] bool valid_id(int32_t id) const { return id >= 0 && id < n_vocab(); }
  [[nodiscard]] int32_t find(std::string_view s) const;
  [[nodiscard]] static uint64_t pair_key(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
};

/// Loads and validates the vocabulary. Errors name the offending key: a missing or empty
/// `tokenizer.ggml.tokens`, arrays whose lengths disagree with it, special ids out of range
/// (those are ignored, as llama.cpp does), merges that do not split, an unknown
/// `tokenizer.ggml.model` or `tokenizer.ggml.pre`.
Result<Vocab> load_vocab(const gguf::GgufFile& file);

}  // namespace geniex::tokenizer
