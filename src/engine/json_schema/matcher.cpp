#include "engine/json_schema/matcher.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace geniex::engine::json_schema {

namespace {

using Frame = Matcher::Frame;
using detail::ArrPhase;
using detail::FrameKind;
using detail::NumPhase;
using detail::ObjPhase;
using Config = Matcher::Config;

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

bool has_bounds(const Node& n) {
  return n.minimum || n.maximum || n.exclusive_minimum || n.exclusive_maximum;
}

// Whether some number whose text starts with `text` (a sign and integer digits, no leading zero
// beyond "0") can still meet the bounds: its value lies in [v 10^j, (v + 1) 10^j) for some j
// (more digits; a fraction for numbers), mirrored for negatives.
bool integer_prefix_feasible(const Node& n, const std::string& text, bool integer) {
  if (!has_bounds(n)) return true;
  const bool neg = !text.empty() && text[0] == '-';
  const std::string digits = text.substr(neg ? 1 : 0);
  if (digits.empty()) {  // "-": some negative number must be allowed
    const double lo = std::max(n.minimum ? *n.minimum : -INFINITY,
                               n.exclusive_minimum ? *n.exclusive_minimum : -INFINITY);
    return lo < (integer ? -0.5 : 0.0);
  }
  double v = std::strtod(digits.c_str(), nullptr);
  const bool zero = digits == "0";
  const size_t room = Matcher::kMaxNumberChars - text.size();
  double scale = 1.0;
  for (size_t j = 0; j <= (zero ? 0 : room); ++j, scale *= 10.0) {
    double lo = v * scale, hi = (v + 1.0) * scale - (integer ? 1.0 : 0.0);
    if (integer && j == 0) hi = lo;
    if (neg) {
      const double t = lo;
      lo = -hi;
      hi = -t;
    }
    // [lo, hi] (open at the fraction end for numbers: close enough for pruning).
    const double min_ok = n.minimum ? *n.minimum : -INFINITY;
    const double max_ok = n.maximum ? *n.maximum : INFINITY;
    const double xmin = n.exclusive_minimum ? *n.exclusive_minimum : -INFINITY;
    const double xmax = n.exclusive_maximum ? *n.exclusive_maximum : INFINITY;
    if (hi >= min_ok && lo <= max_ok && hi > xmin && lo < xmax) return true;
    if (!neg && lo > max_ok) return false;  // grows with j
    if (neg && hi < min_ok) return false;
  }
  return false;
}

// Whether some number whose text starts with `text` (integer part, '.', k fraction digits) can
// still meet the bounds: more fraction digits keep it in [|x|, |x| + 10^-k], mirrored for
// negatives; at the length limit it must be in bounds as it is.
bool fraction_prefix_feasible(const Node& n, const std::string& text) {
  if (!has_bounds(n)) return true;
  const bool neg = !text.empty() && text[0] == '-';
  const double x = std::fabs(std::strtod(text.c_str(), nullptr));
  if (text.size() >= Matcher::kMaxNumberChars) return in_bounds(n, neg ? -x : x);
  const size_t dot = text.find('.');
  const auto k = static_cast<int>(text.size() - dot - 1);
  double lo = x, hi = x + std::pow(10.0, -k);
  if (neg) {
    const double t = lo;
    lo = -hi;
    hi = -t;
  }
  const double min_ok = std::max(n.minimum ? *n.minimum : -INFINITY,
                                 n.exclusive_minimum ? *n.exclusive_minimum : -INFINITY);
  const double max_ok = std::min(n.maximum ? *n.maximum : INFINITY,
                                 n.exclusive_maximum ? *n.exclusive_maximum : INFINITY);
  return hi > min_ok && lo < max_ok;
}

bool template_accepts(const std::string& t, size_t pos, char c) {
  if (pos >= t.size()) return false;
  const auto u = static_cast<unsigned char>(c);
  if (t[pos] == '#') return std::isdigit(u) != 0;
  if (t[pos] == '%') return std::isxdigit(u) != 0;
  return t[pos] == c;
}

class Stepper {
 public:
  explicit Stepper(const Schema& s) : s_(s) {}

  // Feeds c to configuration c0, appending every surviving configuration to out.
  void step(Config c0, char c, std::vector<Config>& out, int depth = 0) {
    if (depth > 16 || out.size() >= Matcher::kMaxConfigs) return;
    Config cfg = std::move(c0);
    if (cfg.done) return;  // nothing may follow a complete value
    const bool ws = is_ws(c);
    if (!ws) cfg.ws = 0;
    if (cfg.stack.empty()) return;
    Frame& f = cfg.stack.back();
    switch (f.kind) {
      case FrameKind::kValue: {
        if (ws) return whitespace(std::move(cfg), c, out);
        const Node* n = node(f.node);
        if (n != nullptr && n->kind == Kind::kAnyOf) {
          for (int32_t a : n->alts) {
            Config alt = cfg;
            alt.stack.back().node = a;
            step(std::move(alt), c, out, depth + 1);
          }
          return;
        }
        if (!start_value(f, c)) return;
        cfg.ws = 0;
        if (f.kind == FrameKind::kNumber || f.kind == FrameKind::kLiteral) {
          return step(std::move(cfg), c, out, depth + 1);  // the first byte is its own
        }
        return keep(std::move(cfg), out);
      }
      case FrameKind::kObject: return object(std::move(cfg), c, out, depth);
      case FrameKind::kArray: return array(std::move(cfg), c, out, depth);
      case FrameKind::kString: return string(std::move(cfg), c, out);
      case FrameKind::kNumber: return number(std::move(cfg), c, out, depth);
      case FrameKind::kLiteral: return literal(std::move(cfg), c, out, depth);
    }
  }

  [[nodiscard]] bool complete(const Config& cfg) const {
    if (cfg.done) return true;
    if (cfg.stack.size() != 1) return false;
    const Frame& f = cfg.stack.back();
    if (f.kind == FrameKind::kNumber) {
      const Node* n = node(f.node);
      return number_ends(f) &&
             (n == nullptr || in_bounds(*n, std::strtod(f.text.c_str(), nullptr)));
    }
    if (f.kind == FrameKind::kLiteral) {
      return std::any_of(f.lits.begin(), f.lits.end(),
                         [&](const std::string& l) { return l.size() == f.pos; });
    }
    return false;
  }

 private:
  [[nodiscard]] const Node* node(int32_t i) const {
    return i < 0 ? nullptr : &s_.nodes[static_cast<size_t>(i)];
  }

  void keep(Config cfg, std::vector<Config>& out) {
    if (cfg.stack.size() > Matcher::kMaxDepth) return;
    out.push_back(std::move(cfg));
  }

  // Whitespace between tokens of JSON, as llama.cpp's schema grammars allow it: nothing, one
  // space or tab, or one newline and at most kMaxIndent spaces or tabs (cfg.ws: 0 none yet,
  // 1 after a space, 2 + k after a newline and k indent characters).
  void whitespace(Config cfg, char c, std::vector<Config>& out) {
    if (cfg.ws == 0) {
      if (c == '\r') return;
      cfg.ws = c == '\n' ? 2 : 1;
    } else if (cfg.ws == 1 || c == '\n' || c == '\r' || cfg.ws - 2 >= Matcher::kMaxIndent) {
      return;
    } else {
      ++cfg.ws;
    }
    keep(std::move(cfg), out);
  }

  // The value on top is complete: pop it and let the parent go on.
  static void pop(Config& cfg) {
    cfg.stack.pop_back();
    if (cfg.stack.empty()) cfg.done = true;
  }

  // Turns a kValue frame into the frame of the value that starts with c; false if none may.
  bool start_value(Frame& f, char c) {
    const Node* n = node(f.node);
    const Kind k = n == nullptr ? Kind::kAny : n->kind;
    auto lits = [&](std::vector<std::string> l) {
      f.kind = FrameKind::kLiteral;
      f.lits = std::move(l);
      f.pos = 0;
      return true;
    };
    auto num = [&] {
      if (c != '-' && !std::isdigit(static_cast<unsigned char>(c))) return false;
      f.kind = FrameKind::kNumber;
      f.text.clear();
      f.num = NumPhase::kMinus;
      return true;
    };
    switch (k) {
      case Kind::kAny:
        if (c == '{') {
          f.kind = FrameKind::kObject;
          f.open_keys = true;
          f.value_node = -1;
          return true;
        }
        if (c == '[') {
          f.kind = FrameKind::kArray;
          return true;
        }
        if (c == '"') {
          f.kind = FrameKind::kString;
          return true;
        }
        if (c == 't' || c == 'f' || c == 'n') return lits({"true", "false", "null"});
        return num();
      case Kind::kObject:
        if (c != '{') return false;
        f.kind = FrameKind::kObject;
        f.open_keys = n->props.empty();
        f.no_keys = n->props.empty() && n->extra < 0;
        f.value_node = n->extra;
        return true;
      case Kind::kArray:
        if (c != '[') return false;
        f.kind = FrameKind::kArray;
        return true;
      case Kind::kString:
        if (c != '"') return false;
        f.kind = FrameKind::kString;
        return true;
      case Kind::kNumber:
      case Kind::kInteger: return num();
      case Kind::kBoolean: return lits({"true", "false"});
      case Kind::kNull: return lits({"null"});
      case Kind::kLiterals: return lits(n->literals);
      case Kind::kAnyOf: return false;  // expanded by step()
    }
    return false;
  }

  // Whether an object frame may close now: open objects always; declared ones when every
  // property from next_prop on is optional.
  [[nodiscard]] bool may_close(const Frame& f) const {
    if (f.open_keys) return true;
    const Node& n = *node(f.node);
    for (size_t j = static_cast<size_t>(f.next_prop); j < n.props.size(); ++j) {
      if (n.props[j].required) return false;
    }
    return true;
  }

  // Declared properties the next key may be: from next_prop through the first required one.
  template <typename Fn>
  void for_candidates(const Frame& f, Fn&& fn) const {
    const Node& n = *node(f.node);
    for (size_t j = static_cast<size_t>(f.next_prop); j < n.props.size(); ++j) {
      if (fn(j, n.props[j])) return;
      if (n.props[j].required) return;
    }
  }

  void begin_key(Config cfg, std::vector<Config>& out) {
    Frame& f = cfg.stack.back();
    if (f.open_keys) {
      if (f.no_keys) return;  // "{}" only
      f.obj = ObjPhase::kColon;
      Frame k;
      k.kind = FrameKind::kString;
      k.is_key = true;
      cfg.stack.push_back(std::move(k));
    } else {
      bool any = false;
      for_candidates(f, [&](size_t, const Prop&) { return any = true; });
      if (!any) return;
      f.obj = ObjPhase::kKeyChars;
      f.key.clear();
    }
    cfg.ws = 0;
    keep(std::move(cfg), out);
  }

  void object(Config cfg, char c, std::vector<Config>& out, int) {
    Frame& f = cfg.stack.back();
    const bool ws = is_ws(c);
    switch (f.obj) {
      case ObjPhase::kOpen:
      case ObjPhase::kNeedKey:
        if (ws) return whitespace(std::move(cfg), c, out);
        if (c == '"') return begin_key(std::move(cfg), out);
        if (c == '}' && f.obj == ObjPhase::kOpen && may_close(f)) {
          cfg.ws = 0;
          pop(cfg);
          return keep(std::move(cfg), out);
        }
        return;
      case ObjPhase::kKeyChars: {
        if (c == '"') {
          int32_t hit = -1;
          for_candidates(f, [&](size_t j, const Prop& p) {
            if (p.key != f.key) return false;
            hit = static_cast<int32_t>(j);
            return true;
          });
          if (hit < 0) return;
          f.next_prop = hit + 1;
          f.value_node = node(f.node)->props[static_cast<size_t>(hit)].node;
          f.obj = ObjPhase::kColon;
          return keep(std::move(cfg), out);
        }
        f.key.push_back(c);
        bool prefix = false;
        for_candidates(f, [&](size_t, const Prop& p) {
          prefix = p.key.size() >= f.key.size() && p.key.compare(0, f.key.size(), f.key) == 0;
          return prefix;
        });
        if (prefix) keep(std::move(cfg), out);
        return;
      }
      case ObjPhase::kColon:
        if (ws) return whitespace(std::move(cfg), c, out);
        if (c != ':') return;
        f.obj = ObjPhase::kAfterValue;
        ++f.count;
        {
          Frame v;
          v.node = f.value_node;
          cfg.stack.push_back(std::move(v));
        }
        cfg.ws = 0;
        return keep(std::move(cfg), out);
      case ObjPhase::kAfterValue:
        if (ws) return whitespace(std::move(cfg), c, out);
        if (c == ',') {
          if (!f.open_keys) {  // some declared property must be left for the next key
            bool any = false;
            for_candidates(f, [&](size_t, const Prop&) { return any = true; });
            if (!any) return;
          }
          f.obj = ObjPhase::kNeedKey;
          cfg.ws = 0;
          return keep(std::move(cfg), out);
        }
        if (c == '}' && may_close(f)) {
          cfg.ws = 0;
          pop(cfg);
          return keep(std::move(cfg), out);
        }
        return;
    }
  }

  void array(Config cfg, char c, std::vector<Config>& out, int depth) {
    Frame& f = cfg.stack.back();
    const Node* n = node(f.node);
    const int64_t min_items = n != nullptr ? n->min_items : 0;
    const int64_t max_items = n != nullptr ? n->max_items : -1;
    const int32_t items = n != nullptr ? n->items : -1;
    if (is_ws(c)) return whitespace(std::move(cfg), c, out);
    if (f.arr == ArrPhase::kAfterValue) {
      if (c == ',' && (max_items < 0 || f.count < max_items)) {
        f.arr = ArrPhase::kNeedValue;
        cfg.ws = 0;
        return keep(std::move(cfg), out);
      }
      if (c == ']' && f.count >= min_items) {
        cfg.ws = 0;
        pop(cfg);
        return keep(std::move(cfg), out);
      }
      return;
    }
    if (c == ']' && f.arr == ArrPhase::kOpen && min_items == 0) {
      cfg.ws = 0;
      pop(cfg);
      return keep(std::move(cfg), out);
    }
    if (max_items == 0) return;
    f.arr = ArrPhase::kAfterValue;
    ++f.count;
    Frame v;
    v.node = items;
    cfg.stack.push_back(std::move(v));
    if (cfg.stack.size() > Matcher::kMaxDepth) return;
    step(std::move(cfg), c, out, depth + 1);
  }

  void string(Config cfg, char c, std::vector<Config>& out) {
    Frame& f = cfg.stack.back();
    const Node* n = f.is_key ? nullptr : node(f.node);
    const auto u = static_cast<unsigned char>(c);
    const bool formatted = n != nullptr && !n->formats.empty();
    if (f.esc == 1) {
      if (c == 'u') {
        f.esc = 5;
        f.code = 0;
      } else if (f.low_next) {
        return;
      } else if (std::string_view("\"\\/bfnrt").find(c) != std::string_view::npos) {
        f.esc = 0;
        ++f.len;
      } else {
        return;
      }
      return keep(std::move(cfg), out);
    }
    if (f.esc > 1) {
      if (std::isxdigit(u) == 0) return;
      const int digit = std::isdigit(u) != 0 ? u - '0' : (std::tolower(u) - 'a') + 10;
      f.code = static_cast<uint16_t>(f.code * 16 + digit);
      // Surrogates (RFC 8259 section 7) must pair: D800-DBFF then DC00-DFFF. Checked per digit
      // so that every accepted prefix can still be completed.
      if (f.esc == 5 && f.low_next && digit != 0xD) return;
      if (f.esc == 4 && (f.code >> 4) == 0xD) {
        const bool low = (f.code & 0xF) >= 0xC;
        if (low != f.low_next) return;
      }
      if (--f.esc == 1) {
        f.esc = 0;
        if (f.code >= 0xD800 && f.code <= 0xDBFF) {
          f.low_next = true;  // the pair is one character, counted after its low half
        } else {
          f.low_next = false;
          ++f.len;
        }
      }
      return keep(std::move(cfg), out);
    }
    if (f.low_next && c != '\\') return;
    if (f.utf8_left > 0) {  // inside a multi-byte character: only its continuation bytes
      if (u < f.utf8_lo || u > f.utf8_hi) return;
      --f.utf8_left;
      f.utf8_lo = 0x80;
      f.utf8_hi = 0xBF;
      return keep(std::move(cfg), out);
    }
    if (c == '"') {
      if (n != nullptr && f.len < n->min_len) return;
      if (formatted &&
          std::none_of(n->formats.begin(), n->formats.end(),
                       [&](const std::string& t) { return t.size() == f.text.size(); }))
        return;
      pop(cfg);
      return keep(std::move(cfg), out);
    }
    if (u < 0x20) return;
    if (u >= 0x80) {  // a UTF-8 lead byte (RFC 3629: no overlongs, surrogates or > U+10FFFF)
      if (u < 0xC2 || u > 0xF4) return;
      f.utf8_left = u < 0xE0 ? 1 : u < 0xF0 ? 2 : 3;
      f.utf8_lo = u == 0xE0 ? 0xA0 : u == 0xF0 ? 0x90 : 0x80;
      f.utf8_hi = u == 0xED ? 0x9F : u == 0xF4 ? 0x8F : 0xBF;
    }
    if (n != nullptr && n->max_len >= 0 && f.len >= n->max_len) return;
    if (formatted) {
      if (c == '\\') return;
      const size_t pos = f.text.size();
      if (std::none_of(n->formats.begin(), n->formats.end(),
                       [&](const std::string& t) { return template_accepts(t, pos, c); }))
        return;
      f.text.push_back(c);
    }
    if (c == '\\') {
      f.esc = 1;
      return keep(std::move(cfg), out);
    }
    ++f.len;  // a character starts (its continuation bytes come above)
    keep(std::move(cfg), out);
  }

  static bool number_ends(const Frame& f) {
    return f.num == NumPhase::kZero || f.num == NumPhase::kInt || f.num == NumPhase::kFrac ||
           f.num == NumPhase::kExpDigits;
  }

  void number(Config cfg, char c, std::vector<Config>& out, int depth) {
    Frame& f = cfg.stack.back();
    const Node* n = node(f.node);
    const bool integer = n != nullptr && n->kind == Kind::kInteger;
    const bool bounded = n != nullptr && has_bounds(*n);
    const bool digit = std::isdigit(static_cast<unsigned char>(c)) != 0;
    NumPhase next = f.num;
    bool ok = false;
    const bool first = f.text.empty();
    auto go = [&](NumPhase p) {
      ok = true;
      next = p;
    };
    const bool exp = c == 'e' || c == 'E';
    switch (f.num) {
      case NumPhase::kMinus:
        if (first && c == '-') {
          go(NumPhase::kMinus);
        } else if (digit) {
          go(c == '0' ? NumPhase::kZero : NumPhase::kInt);
        }
        break;
      case NumPhase::kZero:
      case NumPhase::kInt:
        if (digit && f.num == NumPhase::kInt) {
          go(NumPhase::kInt);
        } else if (!integer && c == '.') {
          go(NumPhase::kDot);
        } else if (!integer && !bounded && exp) {
          go(NumPhase::kExp);
        }
        break;
      case NumPhase::kDot:
        if (digit) go(NumPhase::kFrac);
        break;
      case NumPhase::kFrac:
        if (digit) {
          go(NumPhase::kFrac);
        } else if (!bounded && exp) {
          go(NumPhase::kExp);
        }
        break;
      case NumPhase::kExp:
        if (c == '+' || c == '-') {
          go(NumPhase::kExpSign);
        } else if (digit) {
          go(NumPhase::kExpDigits);
        }
        break;
      case NumPhase::kExpSign:
        if (digit) go(NumPhase::kExpDigits);
        break;
      case NumPhase::kExpDigits:  // at most two exponent digits: the value stays a double
        if (digit && !std::isdigit(static_cast<unsigned char>(f.text[f.text.size() - 2])))
          go(NumPhase::kExpDigits);
        break;
    }
    if (ok) {
      if (f.text.size() + 1 > Matcher::kMaxNumberChars) return;
      // Integers stay within int64 (18 digits), where JSON readers keep them integers.
      if (integer && digit && f.text.size() - (f.text[0] == '-' ? 1 : 0) >= 18) return;
      f.text.push_back(c);
      f.num = next;
      if (n != nullptr && (next == NumPhase::kInt || next == NumPhase::kZero || f.text == "-") &&
          !integer_prefix_feasible(*n, f.text, integer))
        return;
      if (n != nullptr && (next == NumPhase::kDot || next == NumPhase::kFrac) &&
          !fraction_prefix_feasible(*n, f.text))
        return;
      // An integer part at the length limit must be a number already.
      if (f.text.size() == Matcher::kMaxNumberChars && !number_ends(f)) return;
      cfg.ws = 0;
      return keep(std::move(cfg), out);
    }
    // c does not continue the number: it ends here (if it may) and c goes to the parent.
    if (!number_ends(f)) return;
    if (n != nullptr && !in_bounds(*n, std::strtod(f.text.c_str(), nullptr))) return;
    pop(cfg);
    if (cfg.done) return;  // nothing may follow a top-level value
    step(std::move(cfg), c, out, depth + 1);
  }

  void literal(Config cfg, char c, std::vector<Config>& out, int depth) {
    Frame& f = cfg.stack.back();
    const bool ended = std::any_of(f.lits.begin(), f.lits.end(),
                                   [&](const std::string& l) { return l.size() == f.pos; });
    if (ended) {  // fork: the literal ends here and c goes to the parent
      Config done = cfg;
      pop(done);
      if (!done.done) step(std::move(done), c, out, depth + 1);
    }
    std::vector<std::string> alive;
    for (std::string& l : f.lits) {
      if (l.size() > f.pos && l[f.pos] == c) alive.push_back(std::move(l));
    }
    if (alive.empty()) return;
    f.lits = std::move(alive);
    ++f.pos;
    cfg.ws = 0;
    keep(std::move(cfg), out);
  }

  const Schema& s_;
};

}  // namespace

Matcher::Matcher(const Schema& schema) : schema_(&schema) {
  Config c;
  c.stack.push_back(Frame{});
  c.stack.back().node = schema.nodes.empty() ? -1 : 0;
  configs_.push_back(std::move(c));
}

bool Matcher::feed(std::string_view text) {
  Stepper st(*schema_);
  std::vector<Config> cur = configs_, next;
  for (const char c : text) {
    next.clear();
    for (Config& cfg : cur) {
      st.step(std::move(cfg), c, next);
      if (next.size() >= kMaxConfigs) break;
    }
    if (next.empty()) return false;
    std::swap(cur, next);
  }
  configs_ = std::move(cur);
  return true;
}

bool Matcher::complete() const {
  Stepper st(*schema_);
  return std::any_of(configs_.begin(), configs_.end(),
                     [&](const Config& c) { return st.complete(c); });
}

}  // namespace geniex::engine::json_schema
