#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "tokenizer/algorithms.h"

namespace geniex::tokenizer {

struct Tokenizer::Impl {
  std::optional<PreTokenizer> pre;        // BPE only
  std::optional<detail::WpmEncoder> wpm;  // WPM only
  std::unique_ptr<detail::SpecialMatcher> specials;
  std::vector<int16_t> byte_of;  // id -> byte for BYTE tokens (<0xNN>), -1 otherwise
};

Tokenizer::Tokenizer(Vocab vocab, std::unique_ptr<Impl> impl)
    : vocab_(std::move(vocab)), impl_(std::move(impl)) {}

Tokenizer::~Tokenizer() = default;

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xNN>" -> NN, else -1.
int parse_byte_token(const std::string& t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  const int hi = hex_digit(t[3]);
  const int lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void replace_spaces_with_lower_block(std::string_view in, std::string& out) {
  for (char c : in) {
    if (c == ' ') {
      out.append("\xE2\x96\x81");
    } else {
      out.push_back(c);
    }
  }
}

void append_unescaped(std::string& out, std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      out.push_back(' ');
      i += 3;
    } else {
      out.push_back(text[i++]);
    }
  }
}

void append_byte_decoded(std::string& out, std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const uint32_t cp = decode_utf8(text, pos);
    const int b = unicode_to_byte(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(start, pos - start));  // not a byte-level character: keep it
    }
  }
}

}  // namespace

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  GENIEX_ASSIGN_OR_RETURN(Vocab v, load_vocab(file));
  auto impl = std::make_unique<Impl>();
  if (v.type == VocabType::kBpe) {
    GENIEX_ASSIGN_OR_RETURN(auto pre, PreTokenizer::create(v.pre == "default" ? "" : v.pre));
    impl->pre.emplace(std::move(pre));
  } else if (v.type == VocabType::kWpm) {
    GENIEX_ASSIGN_OR_RETURN(auto wpm, detail::WpmEncoder::create(v));
    impl->wpm.emplace(std::move(wpm));
  }
  impl->specials = std::make_unique<detail::SpecialMatcher>(v);
  impl->byte_of.assign(v.text.size(), -1);
  for (size_t i = 0; i < v.text.size(); ++i) {
    if ((v.attr[i] & kAttrByte) != 0) {
      impl->byte_of[i] = static_cast<int16_t>(parse_byte_token(v.text[i]));
    }
  }
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(v), std::move(impl)));
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, EncodeOptions opts) const {
  GENIEX_TRY(check_utf8(text, "tokenize"));
  const Vocab& v = vocab_;
  std::vector<detail::Fragment> frags;
  detail::partition_special(v, *impl_->specials, text, opts.parse_special, frags);

  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (opts.add_special && v.add_bos && v.bos != kNoToken) out.push_back(v.bos);
  switch (v.type) {
    case VocabType::kSpm: {
      bool prev_special = true;  // the first fragment gets the dummy prefix too
      std::string buf;
      for (const auto& f : frags) {
        if (f.token != kNoToken) {
          out.push_back(f.token);
          prev_special = true;
          continue;
        }
        buf.clear();
        if (v.add_space_prefix && prev_special) buf.append("\xE2\x96\x81");
        replace_spaces_with_lower_block(text.substr(f.off, f.len), buf);
        detail::spm_encode(v, buf, out);
        prev_special = false;
      }
      break;
    }
    case VocabType::kBpe: {
      std::vector<std::string_view> words;
      for (const auto& f : frags) {
        if (f.token != kNoToken) {
          out.push_back(f.token);
          continue;
        }
        GENIEX_TRY(impl_->pre->split(text.substr(f.off, f.len), words));
        for (std::string_view w : words) detail::bpe_encode_word(v, w, out);
      }
      break;
    }
    case VocabType::kWpm: {
      for (const auto& f : frags) {
        if (f.token != kNoToken) {
          out.push_back(f.token);
          continue;
        }
        GENIEX_TRY(impl_->wpm->encode(v, text.substr(f.off, f.len), out));
      }
      if (opts.add_special && v.add_sep && v.sep != kNoToken) out.push_back(v.sep);
      break;
    }
  }
  if (opts.add_special && v.add_eos && v.eos != kNoToken) out.push_back(v.eos);
  return out;
}

void Tokenizer::append_piece(std::string& out, int32_t id, bool lstrip, bool render_special) const {
  const uint32_t attr = vocab_.attr[id];
  const std::string& text = vocab_.text[id];
  const size_t start = out.size();
  const uint32_t special = kAttrUnknown | kAttrControl;
  if ((attr & special) != 0 && !render_special) return;
  if ((attr & (special | kAttrUserDefined)) != 0) {
    out.append(text);
  } else if ((attr & kAttrNormal) != 0) {
    if (vocab_.type == VocabType::kBpe) {
      append_byte_decoded(out, text);
    } else {
      append_unescaped(out, text);
    }
  } else if ((attr & kAttrByte) != 0) {
    const int b = impl_->byte_of[id];
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else if (vocab_.type == VocabType::kBpe) {
      append_byte_decoded(out, text);
    }
  }
  if (lstrip && out.size() > start && out[start] == ' ') out.erase(start, 1);
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  std::string out;
  if (vocab_.valid_id(id)) append_piece(out, id, false, render_special);
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  return vocab_.valid_id(id) ? vocab_.text[id] : kEmpty;
}

uint32_t Tokenizer::token_attr(int32_t id) const {
  return vocab_.valid_id(id) ? vocab_.attr[id] : 0;
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = vocab_.find(text);
  if (id == kNoToken) return std::nullopt;
  return id;
}

bool Tokenizer::is_eog(int32_t id) const {
  return id != kNoToken && std::binary_search(vocab_.eog.begin(), vocab_.eog.end(), id);
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, DecodeOptions opts) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!vocab_.valid_id(ids[i])) {
      return out_of_range("detokenize: id " + std::to_string(ids[i]) + " at position " +
                          std::to_string(i) + " is outside the vocabulary (n_vocab " +
                          std::to_string(n_vocab()) + ")");
    }
  }
  size_t begin = 0;
  size_t end = ids.size();
  bool remove_space = vocab_.add_space_prefix;
  if (opts.remove_special && vocab_.add_bos && end > 0 && ids[0] == vocab_.bos) {
    remove_space = false;
    begin = 1;
  }
  if (opts.remove_special && vocab_.add_eos && end > begin && ids[end - 1] == vocab_.eos) --end;
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    append_piece(out, ids[i], remove_space, opts.render_special);
    remove_space = false;
  }
  if (vocab_.clean_spaces) detail::clean_up_spaces(out);
  return out;
}

StreamDecoder Tokenizer::stream_decoder(DecodeOptions opts) const { return {*this, opts}; }

// ---- StreamDecoder --------------------------------------------------------------------------

StreamDecoder::StreamDecoder(const Tokenizer& tok, DecodeOptions opts) : tok_(&tok), opts_(opts) {
  reset();
}

void StreamDecoder::reset() {
  n_fed_ = 0;
  remove_space_ = tok_->vocab_.add_space_prefix;
  held_eos_ = false;
  pending_.clear();
  prev1_ = prev2_ = 0;
}

void StreamDecoder::push_piece(int32_t id) {
  tok_->append_piece(pending_, id, remove_space_, opts_.render_special);
  remove_space_ = false;
}

Result<std::string> StreamDecoder::feed(int32_t id) {
  const Vocab& v = tok_->vocab_;
  if (!v.valid_id(id)) {
    return out_of_range("detokenize: id " + std::to_string(id) + " is outside the vocabulary");
  }
  const bool first = n_fed_ == 0;
  ++n_fed_;
  if (first && opts_.remove_special && v.add_bos && id == v.bos) {
    remove_space_ = false;
    return std::string();
  }
  if (held_eos_) {
    held_eos_ = false;
    push_piece(v.eos);
  }
  if (opts_.remove_special && v.add_eos && id == v.eos) {
    held_eos_ = true;  // dropped if it turns out to be the last id
  } else {
    push_piece(id);
  }
  return take_ready(false);
}

std::string StreamDecoder::flush() {
  held_eos_ = false;  // a trailing EOS is removed, as decode() does
  std::string out = take_ready(true);
  reset();
  return out;
}

std::string StreamDecoder::take_ready(bool final) {
  const bool clean = tok_->vocab_.clean_spaces;
  size_t cut = pending_.size();
  if (!final) {
    cut -= utf8_incomplete_tail(pending_);
    if (clean) {
      // A cut is safe when neither of the two bytes before it is a space or an apostrophe:
      // no clean-up rule can then reach across it.
      auto byte_before = [&](size_t k, size_t back) -> char {  // raw byte at k - back
        if (k >= back) return pending_[k - back];
        return back - k == 1 ? prev1_ : prev2_;
      };
      auto risky = [](char c) { return c == ' ' || c == '\''; };
      while (cut > 0) {
        const bool boundary =
            cut == pending_.size() || (static_cast<uint8_t>(pending_[cut]) & 0xC0) != 0x80;
        if (boundary && !risky(byte_before(cut, 1)) && !risky(byte_before(cut, 2))) break;
        --cut;
      }
    }
  }
  if (cut == 0) return {};
  std::string out = pending_.substr(0, cut);
  if (cut >= 2) {
    prev2_ = pending_[cut - 2];
    prev1_ = pending_[cut - 1];
  } else {
    prev2_ = prev1_;
    prev1_ = pending_[0];
  }
  pending_.erase(0, cut);
  if (clean) detail::clean_up_spaces(out);
  return out;
}

}  // namespace geniex::tokenizer
