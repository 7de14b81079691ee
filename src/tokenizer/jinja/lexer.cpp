// Lexer mirroring jinja2.lexer's rules for the default delimiters.
#include "tokenizer/jinja/lexer.h"

#include <algorithm>

#include "tokenizer/jinja/pyformat.h"

namespace geniex::jinja {

LineMap::LineMap(std::string_view src) {
  starts_.push_back(0);
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i] == '\n') starts_.push_back(i + 1);
}

SourcePos LineMap::pos(size_t offset) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  size_t line = static_cast<size_t>(it - starts_.begin());
  size_t col = offset - starts_[line - 1] + 1;
  return {static_cast<uint32_t>(line), static_cast<uint32_t>(col)};
}

std::string normalize_source(std::string_view src, const LexOptions& opts) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!opts.keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

namespace {

// Length in bytes of the Python-whitespace run starting at `i` (regex \s*).
size_t space_run(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size()) {
    auto c = static_cast<unsigned char>(s[j]);
    if (c < 0x80) {
      if (!is_py_space(c)) break;
      ++j;
      continue;
    }
    // decode one multibyte code point
    size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (j + n > s.size()) break;
    std::u32string u = utf8_decode(s.substr(j, n));
    if (u.size() != 1 || !is_py_space(u[0])) break;
    j += n;
  }
  return j - i;
}

bool all_space(std::string_view s) { return !s.empty() && space_run(s, 0) == s.size(); }

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python's "unicode-escape" decoding of a string literal body.
std::string unescape(std::string_view body, size_t offset, const LineMap& lines) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    auto hex = [&](size_t n) -> char32_t {
      if (i + n >= body.size())
        fail(ErrorKind::kSyntax, "truncated \\x/\\u escape in string", lines.pos(offset));
      char32_t v = 0;
      for (size_t k = 1; k <= n; ++k) {
        char h = body[i + k];
        int d = is_digit(h)              ? h - '0'
                : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                         : -1;
        if (d < 0) fail(ErrorKind::kSyntax, "invalid \\x/\\u escape in string", lines.pos(offset));
        v = v * 16 + static_cast<char32_t>(d);
      }
      i += n;
      return v;
    };
    switch (e) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': utf8_append(out, hex(2)); break;
      case 'u': utf8_append(out, hex(4)); break;
      case 'U': {
        char32_t v = hex(8);
        if (v > 0x10ffff)
          fail(ErrorKind::kSyntax, "invalid \\U escape in string", lines.pos(offset));
        utf8_append(out, v);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          char32_t v = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k)
            v = v * 8 + static_cast<char32_t>(body[++i] - '0');
          utf8_append(out, v);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& opts, const LineMap& lines)
      : s_(src), opts_(opts), lines_(lines) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) {
      size_t k = find_tag(pos_);
      if (k == std::string_view::npos) {
        push(TokType::kText, std::string(s_.substr(pos_)), pos_);
        pos_ = s_.size();
        break;
      }
      char kind = s_[k + 1];
      char sign = (k + 2 < s_.size() && (s_[k + 2] == '-' || s_[k + 2] == '+')) ? s_[k + 2] : 0;
      std::string text(s_.substr(pos_, k - pos_));
      if (sign == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (sign != '+' && opts_.lstrip_blocks && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting_) && all_space(std::string_view(text).substr(l_pos)))
          text.resize(l_pos);
      }
      if (!text.empty()) push(TokType::kText, std::move(text), pos_);
      size_t body = k + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        lex_comment(k, body);
      } else if (kind == '%' && try_raw(k, body)) {
        // handled
      } else {
        lex_tag(kind == '{', k, body);
      }
    }
    push(TokType::kEof, "", s_.size());
    return std::move(toks_);
  }

 private:
  size_t find_tag(size_t from) const {
    size_t k = from;
    while (true) {
      k = s_.find('{', k);
      if (k == std::string_view::npos || k + 1 >= s_.size()) return std::string_view::npos;
      char c = s_[k + 1];
      if (c == '{' || c == '%' || c == '#') return k;
      ++k;
    }
  }

  void push(TokType t, std::string v, size_t off) { toks_.push_back(Token{t, std::move(v), off}); }

  // Consumes a closing delimiter `close` ("%}", "}}" or "#}") at `p` (which points at the
  // optional '-' / '+' or at the delimiter) and sets pos_ past trailing whitespace it eats.
  void finish_end(size_t p, char sign, bool block_like) {
    size_t after = p + (sign ? 1 : 0) + 2;
    if (sign == '-') {
      after += space_run(s_, after);
    } else if (sign != '+' && block_like && opts_.trim_blocks && after < s_.size() &&
               s_[after] == '\n') {
      ++after;
    }
    pos_ = after;
    line_starting_ = after > 0 && s_[after - 1] == '\n';
  }

  void lex_comment(size_t k, size_t body) {
    size_t e = s_.find("#}", body);
    if (e == std::string_view::npos)
      fail(ErrorKind::kSyntax, "Missing end of comment tag", lines_.pos(k));
    char sign = 0;
    if (e > body && (s_[e - 1] == '-' || s_[e - 1] == '+')) sign = s_[e - 1];
    finish_end(sign ? e - 1 : e, sign, true);
  }

  bool try_raw(size_t k, size_t body) {
    size_t p = body + space_run(s_, body);
    if (s_.compare(p, 3, "raw") != 0 || (p + 3 < s_.size() && is_name_char(s_[p + 3])))
      return false;
    p += 3;
    p += space_run(s_, p);
    if (s_.compare(p, 3, "-%}") == 0) {
      p += 3;
      p += space_run(s_, p);
    } else if (s_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      return false;
    }
    // find {%[-+]? endraw [-+]?%}
    size_t search = p;
    while (true) {
      size_t t = s_.find("{%", search);
      if (t == std::string_view::npos)
        fail(ErrorKind::kSyntax, "Missing end of raw directive", lines_.pos(k));
      size_t q = t + 2;
      char sign = (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ? s_[q] : 0;
      if (sign) ++q;
      q += space_run(s_, q);
      if (s_.compare(q, 6, "endraw") != 0) {
        search = t + 2;
        continue;
      }
      q += 6;
      q += space_run(s_, q);
      char esign = (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ? s_[q] : 0;
      if (s_.compare(q + (esign ? 1 : 0), 2, "%}") != 0) {
        search = t + 2;
        continue;
      }
      std::string text(s_.substr(p, t - p));
      if (sign == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (sign != '+' && opts_.lstrip_blocks) {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 && all_space(std::string_view(text).substr(l_pos))) text.resize(l_pos);
      }
      if (!text.empty()) push(TokType::kText, std::move(text), p);
      finish_end(q, esign, true);
      return true;
    }
  }

  void lex_tag(bool is_var, size_t k, size_t body) {
    push(is_var ? TokType::kVarBegin : TokType::kBlockBegin, "", k);
    std::vector<char> balance;
    size_t p = body;
    while (true) {
      p += space_run(s_, p);
      if (p >= s_.size())
        fail(ErrorKind::kSyntax,
             is_var ? "unexpected end of template, expected end of print statement ('}}')"
                    : "unexpected end of template, expected end of block statement ('%}')",
             lines_.pos(k));
      if (balance.empty()) {
        if (is_var) {
          if (s_.compare(p, 3, "-}}") == 0) {
            push(TokType::kVarEnd, "", p);
            finish_end(p, '-', false);
            return;
          }
          if (s_.compare(p, 2, "}}") == 0) {
            push(TokType::kVarEnd, "", p);
            finish_end(p, 0, false);
            return;
          }
        } else {
          if ((s_[p] == '-' || s_[p] == '+') && s_.compare(p + 1, 2, "%}") == 0) {
            push(TokType::kBlockEnd, "", p);
            finish_end(p, s_[p], true);
            return;
          }
          if (s_.compare(p, 2, "%}") == 0) {
            push(TokType::kBlockEnd, "", p);
            finish_end(p, 0, true);
            return;
          }
        }
      }
      char c = s_[p];
      if (is_digit(c)) {
        p = lex_number(p);
      } else if (is_name_start(c)) {
        size_t e = p;
        while (e < s_.size() && is_name_char(s_[e])) ++e;
        push(TokType::kName, std::string(s_.substr(p, e - p)), p);
        p = e;
      } else if (c == '\'' || c == '"') {
        size_t e = p + 1;
        while (e < s_.size() && s_[e] != c) e += (s_[e] == '\\') ? 2 : 1;
        if (e >= s_.size()) fail(ErrorKind::kSyntax, "unterminated string literal", lines_.pos(p));
        push(TokType::kString, unescape(s_.substr(p + 1, e - p - 1), p, lines_), p);
        p = e + 1;
      } else {
        static const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (const char* t : kTwo)
          if (s_.compare(p, 2, t) == 0) op = t;
        if (op.empty()) {
          if (std::string_view("+-/*%~[](){}<>=.:|,;").find(c) == std::string_view::npos)
            fail(ErrorKind::kSyntax, std::string("unexpected char '") + c + "'", lines_.pos(p));
          op = std::string(1, c);
          if (c == '(' || c == '[' || c == '{') {
            balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
          } else if (c == ')' || c == ']' || c == '}') {
            if (balance.empty())
              fail(ErrorKind::kSyntax, std::string("unexpected '") + c + "'", lines_.pos(p));
            if (balance.back() != c)
              fail(ErrorKind::kSyntax,
                   std::string("unexpected '") + c + "', expected '" + balance.back() + "'",
                   lines_.pos(p));
            balance.pop_back();
          }
        }
        push(TokType::kOp, op, p);
        p += op.size();
      }
    }
  }

  size_t lex_number(size_t p) {
    auto digits = [&](size_t q) {
      size_t e = q;
      while (e < s_.size() && (is_digit(s_[e]) ||
                               (s_[e] == '_' && e + 1 < s_.size() && is_digit(s_[e + 1]) && e > q)))
        ++e;
      return e;
    };
    size_t e = digits(p);
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t q = e + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && is_digit(s_[q])) {
        e = digits(q);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = p; i < e; ++i)
      if (s_[i] != '_') text += s_[i];
    push(is_float ? TokType::kFloat : TokType::kInt, text, p);
    return e;
  }

  std::string_view s_;
  const LexOptions& opts_;
  const LineMap& lines_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Token> toks_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view src, const LexOptions& opts, const LineMap& lines) {
  return Lexer(src, opts, lines).run();
}

}  // namespace geniex::jinja
