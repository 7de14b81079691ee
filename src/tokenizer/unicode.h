// UTF-8 helpers, the GPT-2 byte<->unicode map, and a thin PCRE2 wrapper. Unicode character
// properties come from PCRE2 (compiled with UTF + UCP); there are no hand-written tables here
// beyond the GPT-2 byte map, which is part of the byte-level BPE format itself.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace geniex::tokenizer {

/// Length of the UTF-8 sequence that starts with byte `b` (1 for a stray continuation byte or
/// an invalid lead byte, so callers always advance).
size_t utf8_seq_len(uint8_t b);

/// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
/// On failure `*bad_offset` (if given) receives the offset of the first bad byte.
bool utf8_valid(std::string_view text, size_t* bad_offset = nullptr);

/// kInvalidArgument naming the offset when `text` is not valid UTF-8.
Status check_utf8(std::string_view text, std::string_view what);

/// Appends the UTF-8 encoding of `cp` (must be <= U+10FFFF).
void append_utf8(std::string& out, uint32_t cp);

/// Decodes one code point at `pos` of valid UTF-8 and advances `pos`.
uint32_t decode_utf8(std::string_view text, size_t& pos);

/// Number of bytes at the end of `text` that form an incomplete (but so far valid) UTF-8
/// sequence: a streaming decoder holds them back until the rest arrives. 0 when complete.
size_t utf8_incomplete_tail(std::string_view text);

/// GPT-2 byte-level map: byte -> code point (U+0021..U+00FF or U+0100..U+0143).
uint32_t byte_to_unicode(uint8_t b);
/// Inverse of byte_to_unicode; -1 when `cp` is not in the map.
int unicode_to_byte(uint32_t cp);
/// Maps every byte of `text` through byte_to_unicode and returns the UTF-8 result.
std::string bytes_to_unicode(std::string_view text);

/// A compiled PCRE2 pattern (UTF + UCP, JIT when available). Immutable after compile, so one
/// instance may be used by many threads at once (each match allocates its own match data).
class Regex {
 public:
  /// `extra_options` are PCRE2 compile options OR-ed onto PCRE2_UTF | PCRE2_UCP.
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pattern,
                                                      uint32_t extra_options = 0);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  /// Calls `on_match(begin, end)` for every successive non-overlapping match in `subject`
  /// (valid UTF-8; not re-checked). Empty matches are skipped.
  template <typename F>
  Status for_each_match(std::string_view subject, F&& on_match) const;

  /// Replaces every match with `replacement` (PCRE2 extended substitution syntax, so
  /// "\\L$0" lowercases with Unicode case rules).
  [[nodiscard]] Result<std::string> replace_all(std::string_view subject,
                                                std::string_view replacement) const;

  [[nodiscard]] const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  // Finds the first match at or after `start`; returns false when none. Sets [*b, *e).
  Result<bool> find(std::string_view subject, size_t start, size_t* b, size_t* e,
                    void* match_data) const;
  void* new_match_data() const;
  static void free_match_data(void* md);

  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
  std::string pattern_;
};

template <typename F>
Status Regex::for_each_match(std::string_view subject, F&& on_match) const {
  void* md = new_match_data();
  if (md == nullptr) return resource_exhausted("pcre2: cannot allocate match data");
  size_t pos = 0;
  Status st;
  while (pos <= subject.size()) {
    size_t b = 0;
    size_t e = 0;
    auto found = find(subject, pos, &b, &e, md);
    if (!found.ok()) {
      st = found.status();
      break;
    }
    if (!*found) break;
    if (e == b) {  // empty match: step one character forward
      if (b >= subject.size()) break;
      pos = b + utf8_seq_len(static_cast<uint8_t>(subject[b]));
      continue;
    }
    on_match(b, e);
    pos = e;
  }
  free_match_data(md);
  return st;
}

}  // namespace geniex::tokenizer
