#include "tokenizer/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

namespace geniex::tokenizer {

size_t utf8_seq_len(uint8_t b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;
}

namespace {

// Length of the valid sequence at `pos`, or 0 when the bytes there are not valid UTF-8.
size_t valid_seq_at(std::string_view s, size_t pos) {
  const auto c0 = static_cast<uint8_t>(s[pos]);
  if (c0 < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    n = 2;
    cp = c0 & 0x1Fu;
  } else if ((c0 & 0xF0) == 0xE0) {
    n = 3;
    cp = c0 & 0x0Fu;
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    n = 4;
    cp = c0 & 0x07u;
  } else {
    return 0;
  }
  if (pos + n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    const auto c = static_cast<uint8_t>(s[pos + i]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3Fu);
  }
  if (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return n;
}

}  // namespace

bool utf8_valid(std::string_view text, size_t* bad_offset) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = valid_seq_at(text, pos);
    if (n == 0) {
      if (bad_offset != nullptr) *bad_offset = pos;
      return false;
    }
    pos += n;
  }
  return true;
}

Status check_utf8(std::string_view text, std::string_view what) {
  size_t bad = 0;
  if (utf8_valid(text, &bad)) return {};
  return invalid_argument(std::string(what) + ": invalid UTF-8 at byte offset " +
                          std::to_string(bad));
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t decode_utf8(std::string_view text, size_t& pos) {
  const auto c0 = static_cast<uint8_t>(text[pos]);
  const size_t n = utf8_seq_len(c0);
  if (n == 1 || pos + n > text.size()) {
    ++pos;
    return c0;
  }
  uint32_t cp = n == 2 ? (c0 & 0x1Fu) : n == 3 ? (c0 & 0x0Fu) : (c0 & 0x07u);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3Fu);
  pos += n;
  return cp;
}

size_t utf8_incomplete_tail(std::string_view text) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<uint8_t>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    if (c < 0x80) return 0;
    const size_t len = utf8_seq_len(c);
    if (len > back && len > 1) {
      // Only hold back what could still become valid UTF-8.
      std::string_view tail = text.substr(n - back);
      if (c < 0xC2 || c > 0xF4) return 0;
      for (size_t i = 1; i < tail.size(); ++i) {
        if ((static_cast<uint8_t>(tail[i]) & 0xC0) != 0x80) return 0;
      }
      return back;
    }
    return 0;
  }
  return 0;
}

namespace {

struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 0x144> to_byte{};
  ByteMap() {
    to_byte.fill(-1);
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool direct = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_cp[b] = direct ? b : next++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) { return byte_map().to_cp[b]; }

int unicode_to_byte(uint32_t cp) {
  if (cp >= byte_map().to_byte.size()) return -1;
  return byte_map().to_byte[cp];
}

std::string bytes_to_unicode(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  const ByteMap& m = byte_map();
  for (char c : text) append_utf8(out, m.to_cp[static_cast<uint8_t>(c)]);
  return out;
}

// ---- Regex ---------------------------------------------------------------------------------

namespace {
std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}
}  // namespace

Result<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern,
                                                    uint32_t extra_options) {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | extra_options, &err, &err_off, nullptr);
  if (code == nullptr) {
    return invalid_argument("pcre2: cannot compile pattern '" + std::string(pattern) +
                            "' at offset " + std::to_string(err_off) + ": " + pcre2_message(err));
  }
  std::shared_ptr<Regex> re(new Regex());
  re->code_ = code;
  re->pattern_ = std::string(pattern);
  uint32_t jit_available = 0;
  if (pcre2_config(PCRE2_CONFIG_JIT, &jit_available) >= 0 && jit_available != 0) {
    re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  }
  return std::shared_ptr<const Regex>(std::move(re));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void* Regex::new_match_data() const {
  return pcre2_match_data_create_from_pattern(static_cast<pcre2_code*>(code_), nullptr);
}

void Regex::free_match_data(void* md) { pcre2_match_data_free(static_cast<pcre2_match_data*>(md)); }

Result<bool> Regex::find(std::string_view subject, size_t start, size_t* b, size_t* e,
                         void* match_data) const {
  auto* code = static_cast<pcre2_code*>(code_);
  auto* md = static_cast<pcre2_match_data*>(match_data);
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  int rc = 0;
  if (jit_) {
    rc = pcre2_jit_match(code, s, subject.size(), start, 0, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // very long runs: retry with the interpreter
      rc = pcre2_match(code, s, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                       nullptr);
    }
  } else {
    rc = pcre2_match(code, s, subject.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0)
    return resource_exhausted("pcre2: matching '" + pattern_ + "' failed: " + pcre2_message(rc));
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  *b = ov[0];
  *e = ov[1];
  return true;
}

Result<std::string> Regex::replace_all(std::string_view subject,
                                       std::string_view replacement) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::string out(subject.size() + 16, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    PCRE2_SIZE out_len = out.size();
    const int rc =
        pcre2_substitute(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0,
                         PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_EXTENDED |
                             PCRE2_SUBSTITUTE_OVERFLOW_LENGTH | PCRE2_NO_UTF_CHECK,
                         nullptr, nullptr, reinterpret_cast<PCRE2_SPTR>(replacement.data()),
                         replacement.size(), reinterpret_cast<PCRE2_UCHAR*>(out.data()), &out_len);
    if (rc >= 0) {
      out.resize(out_len);
      return out;
    }
    if (rc != PCRE2_ERROR_NOMEMORY) {
      return internal_error("pcre2: substitute with '" + pattern_ +
                            "' failed: " + pcre2_message(rc));
    }
    out.assign(out_len + 1, '\0');
  }
  return internal_error("pcre2: substitute output size did not settle");
}

}  // namespace geniex::tokenizer
