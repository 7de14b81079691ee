// SentencePiece-style BPE (tokenizer.ggml.model = "llama"): score-ordered merges with byte
// fallback.
#include <algorithm>
#include <cstdio>
#include <queue>
#include <vector>

#include "tokenizer/algorithms.h"

namespace geniex::tokenizer::detail {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t off;
  uint32_t len;  // 0: merged into its left neighbour
  int32_t id;
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;
  int32_t id;
};

struct BigramLess {
  // Highest score first; among equal scores the leftmost pair.
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

void push_byte_tokens(const Vocab& v, std::string_view bytes, std::vector<int32_t>& out) {
  for (char c : bytes) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", static_cast<unsigned>(static_cast<uint8_t>(c)));
    int32_t id = v.find(buf);
    if (id == kNoToken) id = v.find(std::string_view(&c, 1));
    if (id == kNoToken) id = v.unk;
    if (id != kNoToken) out.push_back(id);
  }
}

}  // namespace

namespace {

void spm_encode_segment(const Vocab& v, std::string_view text, std::vector<int32_t>& out,
                        std::vector<Symbol>& syms) {
  syms.clear();
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = std::min(utf8_seq_len(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({idx - 1, -1, static_cast<uint32_t>(pos), static_cast<uint32_t>(len),
                    v.find(text.substr(pos, len))});
    if (idx > 0) syms[idx - 1].next = idx;
    pos += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t size = syms[l].len + syms[r].len;
    const int32_t id = v.find(text.substr(syms[l].off, size));
    if (id == kNoToken) return;
    queue.push({v.score[id], l, r, size, id});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = syms[b.left];
    Symbol& r = syms[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.size) continue;  // stale
    l.len += r.len;
    l.id = b.id;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int32_t i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id != kNoToken) {
      out.push_back(s.id);
    } else {
      // Only never-merged single characters can be missing from the vocabulary.
      push_byte_tokens(v, text.substr(s.off, s.len), out);
    }
  }
}

}  // namespace

void spm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
  // Merged symbols are always vocabulary tokens, so the merge process never crosses a cut
  // that no token spans. Cutting before each "▁" whose preceding character never precedes
  // "▁" inside a token keeps the result identical while the merge queues stay small.
  constexpr std::string_view kLowerBlock = "\xE2\x96\x81";
  std::vector<Symbol> syms;
  size_t start = 0;
  size_t prev_char = 0;  // offset of the character before `pos`
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_seq_len(static_cast<uint8_t>(text[pos]));
    if (pos > start && text.compare(pos, kLowerBlock.size(), kLowerBlock) == 0) {
      size_t q = prev_char;
      const uint32_t cp = decode_utf8(text, q);
      if (!std::binary_search(v.spm_joins_before_space.begin(), v.spm_joins_before_space.end(),
                              cp)) {
        spm_encode_segment(v, text.substr(start, pos - start), out, syms);
        start = pos;
      }
    }
    prev_char = pos;
    pos += len;
  }
  if (start < text.size()) spm_encode_segment(v, text.substr(start), out, syms);
}

}  // namespace geniex::tokenizer::detail
