// Special-token partitioning and decode-side space clean-up.
#include <algorithm>
#include <string>
#include <vector>

#include "tokenizer/algorithms.h"

namespace geniex::tokenizer::detail {
namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

SpecialMatcher::SpecialMatcher(const Vocab& v) {
  nodes_.emplace_back();  // root
  for (size_t ci = 0; ci < v.special_candidates.size(); ++ci) {
    const std::string& t = v.text[v.special_candidates[ci]];
    int32_t node = 0;
    for (size_t k = 0; k < t.size(); ++k) {
      const auto b = static_cast<uint8_t>(t[k]);
      int32_t child = -1;
      if (node == 0) {
        child = root_next_[b];
      } else {
        auto& nx = nodes_[node].next;
        auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, int32_t{-1}));
        if (it != nx.end() && it->first == b) child = it->second;
      }
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        if (node == 0) {
          root_next_[b] = child;
        } else {
          auto& nx = nodes_[node].next;
          nx.insert(std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, int32_t{-1})),
                    {b, child});
        }
      }
      node = child;
    }
    nodes_[node].ends.push_back(static_cast<int32_t>(ci));
  }
  n_cand_ = v.special_candidates.size();
}

void SpecialMatcher::find_present(std::string_view text, std::vector<char>& present) const {
  present.assign(n_cand_, 0);
  for (size_t i = 0; i < text.size(); ++i) {
    int32_t node = root_next_[static_cast<uint8_t>(text[i])];
    size_t k = i + 1;
    while (node >= 0) {
      for (int32_t c : nodes_[node].ends) present[c] = 1;
      if (k >= text.size()) break;
      const auto b = static_cast<uint8_t>(text[k]);
      const auto& nx = nodes_[node].next;
      auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, int32_t{-1}));
      node = (it != nx.end() && it->first == b) ? it->second : -1;
      ++k;
    }
  }
}

void partition_special(const Vocab& v, const SpecialMatcher& m, std::string_view text,
                       bool parse_special, std::vector<Fragment>& out) {
  out.clear();
  if (text.empty()) return;
  out.push_back({kNoToken, 0, text.size()});
  if (v.special_candidates.empty()) return;
  std::vector<char> present;
  m.find_present(text, present);
  std::vector<Fragment> next;
  for (size_t ci = 0; ci < present.size(); ++ci) {
    if (present[ci] == 0) continue;
    const int32_t id = v.special_candidates[ci];
    const uint32_t attr = v.attr[id];
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown)) != 0) continue;
    const std::string& tok = v.text[id];
    next.clear();
    for (const Fragment& f : out) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      size_t base = f.off;
      size_t len = f.len;
      while (len > 0) {
        const size_t p = text.substr(base, len).find(tok);
        if (p == std::string_view::npos) {
          next.push_back({kNoToken, base, len});
          break;
        }
        size_t left = p;
        if ((attr & kAttrLstrip) != 0) {
          while (left > 0 && is_ascii_space(text[base + left - 1])) --left;
        }
        if (left > 0) next.push_back({kNoToken, base, left});
        next.push_back({id, base + p, tok.size()});
        size_t roff = base + p + tok.size();
        size_t rlen = base + len - roff;
        if ((attr & kAttrRstrip) != 0) {
          while (rlen > 0 && is_ascii_space(text[roff])) {
            ++roff;
            --rlen;
          }
        }
        base = roff;
        len = rlen;
      }
    }
    out.swap(next);
  }
}

void clean_up_spaces(std::string& s) {
  // Three passes, each reading its own input (only spaces are ever removed):
  // 1. " ?", " !", " .", " ,"  -> drop the space
  // 2. " ' "                   -> drop both spaces around a lone apostrophe
  // 3. " 's", " 'm", " 're", " 've" -> drop the space before the contraction
  auto pass = [&s](auto&& drop_before) {
    std::string in;
    in.swap(s);
    s.reserve(in.size());
    std::vector<char> skip(in.size(), 0);
    for (size_t i = 0; i < in.size(); ++i) {
      if (skip[i] != 0) continue;
      if (i > 0) drop_before(in, i, skip);
      s.push_back(in[i]);
    }
  };
  // Each callback may remove the character just emitted (the space before position i).
  pass([&s](const std::string& in, size_t i, std::vector<char>&) {
    const char x = in[i];
    if (in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') && !s.empty() &&
        s.back() == ' ') {
      s.pop_back();
    }
  });
  pass([&s](const std::string& in, size_t i, std::vector<char>& skip) {
    // A space consumed as the right side of an earlier " ' " no longer counts as a space.
    if (in[i] == '\'' && i + 1 < in.size() && in[i - 1] == ' ' && skip[i - 1] == 0 &&
        in[i + 1] == ' ') {
      if (!s.empty() && s.back() == ' ') s.pop_back();
      skip[i + 1] = 1;
    }
  });
  pass([&s](const std::string& in, size_t i, std::vector<char>&) {
    if (in[i - 1] != ' ' || in[i] != '\'' || i + 1 >= in.size()) return;
    const char x1 = in[i + 1];
    bool drop = false;
    if (x1 == 's' || x1 == 'm') {
      drop = true;
    } else if (x1 != 't' && x1 != 'd' && i + 2 < in.size()) {
      const char x2 = in[i + 2];
      drop = (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e');
    }
    if (drop && !s.empty() && s.back() == ' ') s.pop_back();
  });
}

}  // namespace geniex::tokenizer::detail
