#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>

namespace geniex::tokenizer {

int32_t Vocab::find(std::string_view s) const { return to_id.find(text, s); }

void Vocab::TextIndex::build(const std::vector<std::string>& texts) {
  size_t cap = 16;
  while (cap < texts.size() * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  for (size_t id = 0; id < texts.size(); ++id) {
    const size_t h = std::hash<std::string_view>{}(texts[id]);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.id < 0) {
        slot.hash = static_cast<uint32_t>(h >> 32);
        slot.id = static_cast<int32_t>(id);
        break;
      }
      if (slot.hash == static_cast<uint32_t>(h >> 32) && texts[slot.id] == texts[id]) break;
    }
  }
}

int32_t Vocab::TextIndex::find(const std::vector<std::string>& texts, std::string_view s) const {
  if (slots_.empty()) return kNoToken;
  const size_t h = std::hash<std::string_view>{}(s);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& slot = slots_[i];
    if (slot.id < 0) return kNoToken;
    if (slot.hash == tag && texts[slot.id] == s) return slot.id;
  }
}

void Vocab::MergeMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
}

void Vocab::MergeMap::insert(uint64_t key, Merge m) {
  if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) {
    std::vector<Slot> old;
    old.swap(slots_);
    reserve(std::max<size_t>(size_ + 1, old.size()));
    for (const Slot& s : old) {
      if (s.key != kEmpty) insert(s.key, s.merge);
    }
  }
  for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return;
    if (s.key == kEmpty) {
      s.key = key;
      s.merge = m;
      ++size_;
      return;
    }
  }
}

namespace {

constexpr std::string_view kTokens = "tokenizer.ggml.tokens";

uint32_t attr_from_type(int64_t t) {
  switch (static_cast<TokenType>(t)) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    case TokenType::kUndefined: return kAttrUndefined;
  }
  return kAttrUndefined;
}

// Reads an optional boolean key into `out` (unchanged when absent).
Status read_bool(const gguf::GgufFile& f, std::string_view key, bool& out) {
  if (f.find(key) == nullptr) return {};
  GENIEX_ASSIGN_OR_RETURN(out, f.get_bool(key));
  return {};
}

// Reads an optional token-id key. `strict`: an id >= n_vocab is an error naming the key;
// otherwise it is ignored (the default stays), as llama.cpp does.
Status read_id(const gguf::GgufFile& f, std::string_view key, int32_t n_vocab, bool strict,
               int32_t& out) {
  if (f.find(key) == nullptr) return {};
  GENIEX_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v >= static_cast<uint64_t>(n_vocab)) {
    if (strict) {
      return out_of_range(std::string(key) + ": token id " + std::to_string(v) +
                          " is out of range (n_vocab " + std::to_string(n_vocab) + ")");
    }
    return {};
  }
  out = static_cast<int32_t>(v);
  return {};
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

}  // namespace

Result<Vocab> load_vocab(const gguf::GgufFile& file) {
  Vocab v;
  if (file.find("tokenizer.ggml.model") == nullptr) {
    return not_found("tokenizer.ggml.model: key missing (file has no tokenizer)");
  }
  GENIEX_ASSIGN_OR_RETURN(v.model, file.get_string("tokenizer.ggml.model"));
  if (file.find("tokenizer.ggml.pre") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(v.pre, file.get_string("tokenizer.ggml.pre"));
  }
  if (v.model == "llama") {
    v.type = VocabType::kSpm;
  } else if (v.model == "gpt2") {
    v.type = VocabType::kBpe;
  } else if (v.model == "bert") {
    v.type = VocabType::kWpm;
  } else if (v.model == "t5" || v.model == "rwkv" || v.model == "plamo2" || v.model == "gemma4" ||
             v.model == "hybriddna" || v.model == "whitespace") {
    return unimplemented("tokenizer.ggml.model: '" + v.model + "' tokenizers are not supported");
  } else if (v.model == "no_vocab" || v.model == "none") {
    return unimplemented("tokenizer.ggml.model: '" + v.model + "': the file has no vocabulary");
  } else {
    return invalid_argument("tokenizer.ggml.model: unknown tokenizer model '" + v.model + "'");
  }

  // ---- token arrays ----
  if (file.find(kTokens) == nullptr) return not_found(std::string(kTokens) + ": key missing");
  GENIEX_ASSIGN_OR_RETURN(v.text, file.get_string_array(kTokens));
  if (v.text.empty()) return invalid_argument(std::string(kTokens) + ": empty vocabulary");
  if (v.text.size() > static_cast<size_t>(INT32_MAX)) {
    return out_of_range(std::string(kTokens) + ": too many tokens");
  }
  const size_t n = v.text.size();
  const auto n_vocab = static_cast<int32_t>(n);

  v.score.assign(n, 0.0f);
  if (file.find("tokenizer.ggml.scores") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(v.score, file.get_float_array("tokenizer.ggml.scores"));
    if (v.score.size() != n) {
      return invalid_argument("tokenizer.ggml.scores: " + std::to_string(v.score.size()) +
                              " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
  }
  v.attr.assign(n, kAttrNormal);
  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(auto types, file.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return invalid_argument("tokenizer.ggml.token_type: " + std::to_string(types.size()) +
                              " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > 6) {
        return out_of_range("tokenizer.ggml.token_type[" + std::to_string(i) + "]: unknown type " +
                            std::to_string(types[i]));
      }
      v.attr[i] = attr_from_type(types[i]);
    }
  }
  v.to_id.build(v.text);
  for (size_t i = 0; i < n; ++i) v.max_token_len = std::max(v.max_token_len, v.text[i].size());

  // ---- per-family defaults ----
  switch (v.type) {
    case VocabType::kSpm:
      v.bos = 1;
      v.eos = 2;
      v.unk = 0;
      v.add_bos = true;
      v.add_space_prefix = true;
      v.clean_spaces = false;
      if (v.pre.empty()) v.pre = "default";
      break;
    case VocabType::kWpm:
      v.bos = 101;  // [CLS]
      v.unk = 100;
      v.sep = 102;
      v.pad = 0;
      v.mask = 103;
      v.cls = 101;
      v.add_bos = true;
      v.add_sep = true;
      v.clean_spaces = true;
      if (v.pre.empty()) v.pre = "default";
      break;
    case VocabType::kBpe: {
      v.bos = 11;
      v.eos = 11;
      GENIEX_ASSIGN_OR_RETURN(auto pre, PreTokenizer::create(v.pre));
      v.ignore_merges = pre.traits().ignore_merges;
      v.add_bos = pre.traits().add_bos;
      v.clean_spaces = pre.traits().clean_spaces;
      if (v.pre.empty()) v.pre = "default";
      break;
    }
  }
  // Defaults that do not fit this vocabulary are dropped.
  for (int32_t* id : {&v.bos, &v.eos, &v.unk, &v.sep, &v.pad, &v.mask, &v.cls}) {
    if (!v.valid_id(*id)) *id = kNoToken;
  }

  // ---- GGUF overrides ----
  GENIEX_TRY(read_id(file, "tokenizer.ggml.bos_token_id", n_vocab, true, v.bos));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.eos_token_id", n_vocab, true, v.eos));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.eot_token_id", n_vocab, true, v.eot));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.eom_token_id", n_vocab, true, v.eom));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.unknown_token_id", n_vocab, true, v.unk));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.seperator_token_id", n_vocab, false, v.sep));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.padding_token_id", n_vocab, false, v.pad));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.cls_token_id", n_vocab, false, v.cls));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.mask_token_id", n_vocab, false, v.mask));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.prefix_token_id", n_vocab, false, v.fim_pre));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.suffix_token_id", n_vocab, false, v.fim_suf));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.middle_token_id", n_vocab, false, v.fim_mid));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.fim_pre_token_id", n_vocab, false, v.fim_pre));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.fim_suf_token_id", n_vocab, false, v.fim_suf));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.fim_mid_token_id", n_vocab, false, v.fim_mid));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.fim_pad_token_id", n_vocab, false, v.fim_pad));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.fim_rep_token_id", n_vocab, false, v.fim_rep));
  GENIEX_TRY(read_id(file, "tokenizer.ggml.fim_sep_token_id", n_vocab, false, v.fim_sep));
  if (v.type == VocabType::kWpm && file.find("tokenizer.ggml.cls_token_id") != nullptr) {
    v.bos = v.cls;  // BERT's "BOS" is [CLS]
  }
  GENIEX_TRY(read_bool(file, "tokenizer.ggml.add_bos_token", v.add_bos));
  GENIEX_TRY(read_bool(file, "tokenizer.ggml.add_eos_token", v.add_eos));
  GENIEX_TRY(read_bool(file, "tokenizer.ggml.add_sep_token", v.add_sep));
  GENIEX_TRY(read_bool(file, "tokenizer.ggml.add_space_prefix", v.add_space_prefix));
  GENIEX_TRY(read_bool(file, "tokenizer.ggml.normalizer.lowercase", v.lowercase));
  GENIEX_TRY(read_bool(file, "tokenizer.ggml.normalizer.strip_accents", v.strip_accents));
  if (v.add_bos && v.bos == kNoToken) {
    return invalid_argument(
        "tokenizer.ggml.add_bos_token: BOS is added but the vocabulary has no "
        "valid tokenizer.ggml.bos_token_id");
  }
  if (v.add_eos && v.eos == kNoToken) {
    return invalid_argument(
        "tokenizer.ggml.add_eos_token: EOS is added but the vocabulary has no "
        "valid tokenizer.ggml.eos_token_id");
  }

  // ---- BPE merges ----
  if (v.type == VocabType::kBpe) {
    if (file.find("tokenizer.ggml.merges") == nullptr) {
      return not_found("tokenizer.ggml.merges: key missing (required for a gpt2 tokenizer)");
    }
    GENIEX_ASSIGN_OR_RETURN(auto merges, file.get_string_array("tokenizer.ggml.merges"));
    v.merges.reserve(merges.size() * 2);
    for (size_t i = 0; i < merges.size(); ++i) {
      const std::string& m = merges[i];
      const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
      if (sp == std::string::npos) {
        return invalid_argument("tokenizer.ggml.merges[" + std::to_string(i) +
                                "]: no space separating the two parts");
      }
      const int32_t l = v.find(std::string_view(m).substr(0, sp));
      const int32_t r = v.find(std::string_view(m).substr(sp + 1));
      if (l == kNoToken || r == kNoToken) continue;  // can never apply to token symbols
      std::string joined = m.substr(0, sp);
      joined.append(m, sp + 1);
      const int32_t res = v.find(joined);
      if (res == kNoToken) continue;
      v.merges.insert(Vocab::pair_key(l, r), Vocab::Merge{static_cast<int32_t>(i), res});
    }
    v.byte_token.assign(256, kNoToken);
    for (uint32_t b = 0; b < 256; ++b) {
      std::string ch;
      append_utf8(ch, byte_to_unicode(static_cast<uint8_t>(b)));
      v.byte_token[b] = v.find(ch);
    }
  }
  if (v.type == VocabType::kSpm) {
    constexpr std::string_view kLowerBlock = "\xE2\x96\x81";
    for (const std::string& t : v.text) {
      for (size_t p = t.find(kLowerBlock, 1); p != std::string::npos;
           p = t.find(kLowerBlock, p + 1)) {
        size_t q = p - 1;  // back to the lead byte of the previous character
        while (q > 0 && (static_cast<uint8_t>(t[q]) & 0xC0) == 0x80) --q;
        size_t pos = q;
        v.spm_joins_before_space.push_back(decode_utf8(t, pos));
      }
    }
    std::sort(v.spm_joins_before_space.begin(), v.spm_joins_before_space.end());
    v.spm_joins_before_space.erase(
        std::unique(v.spm_joins_before_space.begin(), v.spm_joins_before_space.end()),
        v.spm_joins_before_space.end());
  }

  // ---- end-of-generation and text-detected specials ----
  auto force_control = [&](int32_t id) {
    if ((v.attr[id] & kAttrControl) == 0) v.attr[id] = kAttrControl;
  };
  if (v.eot == kNoToken) {
    for (const char* t :
         {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
          "<|end_of_text|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}) {
      const int32_t id = v.find(t);
      if (id != kNoToken) {
        v.eot = id;
        force_control(id);
        break;
      }
    }
  }
  std::vector<int32_t> eog;
  for (int32_t id : {v.eos, v.eot, v.eom, v.fim_pad, v.fim_rep, v.fim_sep}) {
    if (id != kNoToken) eog.push_back(id);
  }
  for (const char* t : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                        "<|end_of_text|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|return|>",
                        "<|call|>", "<eos>", "</s>", "<end_of_utterance>"}) {
    const int32_t id = v.find(t);
    if (id != kNoToken) {
      eog.push_back(id);
      force_control(id);
    }
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  v.eog = std::move(eog);

  // Control tokens named "...unused..." are unused slots.
  for (size_t i = 0; i < n; ++i) {
    if ((v.attr[i] & kAttrControl) != 0 && contains(v.text[i], "unused")) v.attr[i] |= kAttrUnused;
  }

  // ---- special-token candidates, longest first ----
  for (int32_t id = 0; id < n_vocab; ++id) {
    if ((v.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) != 0 &&
        !v.text[id].empty()) {
      v.special_candidates.push_back(id);
    }
  }
  std::stable_sort(v.special_candidates.begin(), v.special_candidates.end(),
                   [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });

  // Per-model strip attributes (llama.cpp keys these on the lowercased general.name).
  std::string name;
  if (file.find("general.name") != nullptr) {
    auto s = file.get_string("general.name");
    if (s.ok()) name = *s;
  }
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string arch;
  if (file.find("general.architecture") != nullptr) {
    auto s = file.get_string("general.architecture");
    if (s.ok()) arch = *s;
  }
  if (contains(v.pre, "jina-v2-de") || contains(v.pre, "jina-v2-es") ||
      contains(v.pre, "jina-v2-code") || contains(arch, "nomic-bert-moe") ||
      contains(arch, "jina-bert-v3")) {
    const int32_t id = v.find("<mask>");
    if (id != kNoToken) v.attr[id] |= kAttrLstrip;
  } else if (contains(name, "phi-3") || contains(name, "phi3")) {
    for (int32_t id : v.special_candidates) v.attr[id] |= kAttrRstrip;
    if (int32_t id = v.find("</s>"); id != kNoToken) v.attr[id] |= kAttrRstrip;
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (int32_t id = v.find(t); id != kNoToken) v.attr[id] &= ~kAttrRstrip;
    }
  } else if (contains(name, "modern-bert")) {
    if (int32_t id = v.find("[MASK]"); id != kNoToken) v.attr[id] |= kAttrLstrip;
  }
  return v;
}

}  // namespace geniex::tokenizer
