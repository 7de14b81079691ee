// Byte-level BPE (tokenizer.ggml.model = "gpt2"): rank-ordered merges inside one word.
#include <queue>
#include <vector>

#include "tokenizer/algorithms.h"

namespace geniex::tokenizer::detail {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t off;  // into the word
  uint32_t len;  // 0: merged into its left neighbour
  int32_t id;
};

struct Candidate {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;
  int32_t right_id;
  int32_t result;
};

struct CandidateGreater {
  // Lowest rank first; among equal ranks the leftmost pair.
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

void bpe_encode_word(const Vocab& v, std::string_view word, std::vector<int32_t>& out) {
  if (word.empty()) return;
  if (v.ignore_merges) {
    const int32_t id = v.find(bytes_to_unicode(word));
    if (id != kNoToken) {
      out.push_back(id);
      return;
    }
  }
  // One symbol per byte: each byte's GPT-2 character is one vocabulary entry.
  std::vector<Symbol> syms(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    const auto idx = static_cast<int32_t>(i);
    syms[i] = {idx - 1, idx + 1 < static_cast<int32_t>(word.size()) ? idx + 1 : -1,
               static_cast<uint32_t>(i), 1, v.byte_token[static_cast<uint8_t>(word[i])]};
  }

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateGreater> queue;
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const int32_t lid = syms[l].id;
    const int32_t rid = syms[r].id;
    if (lid == kNoToken || rid == kNoToken) return;
    const Vocab::Merge* m = v.merges.find(Vocab::pair_key(lid, rid));
    if (m == nullptr) return;
    queue.push({m->rank, l, r, lid, rid, m->result});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[c.left];
    Symbol& r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.id != c.left_id || r.id != c.right_id) {
      continue;  // stale
    }
    l.len += r.len;
    l.id = c.result;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_add(l.prev, c.left);
    try_add(c.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id != kNoToken) {
      out.push_back(s.id);
      continue;
    }
    // A byte whose character is missing from the vocabulary (never for complete byte-level
    // vocabularies): like llama.cpp, try the bytes of its UTF-8 form one at a time.
    const std::string mapped = bytes_to_unicode(word.substr(s.off, s.len));
    for (char c : mapped) {
      const int32_t id = v.find(std::string_view(&c, 1));
      if (id != kNoToken) out.push_back(id);
    }
  }
}

}  // namespace geniex::tokenizer::detail
