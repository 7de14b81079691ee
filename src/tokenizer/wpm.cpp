// WordPiece (tokenizer.ggml.model = "bert"): BERT normalization (clean text, optional accent
// stripping, lowercasing), split on whitespace / punctuation / CJK characters, then greedy
// longest-match pieces. Word-start tokens are stored with a "▁" prefix in GGUF vocabularies.
#include <algorithm>
#include <string>
#include <vector>

#include "tokenizer/algorithms.h"

#if GENIEX_TOKENIZER_HAVE_ICU
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#endif

namespace geniex::tokenizer::detail {
namespace {

// HF BertPreTokenizer's punctuation: Unicode P plus every ASCII punctuation/symbol character.
constexpr const char* kPunct = R"(\p{P}\$\+<=>\^`\|~)";
// HF's _is_chinese_char ranges (the 0x2B920 start is what the Rust code uses).
constexpr const char* kCjk =
    R"(\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}\x{2B920}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F})";
constexpr const char* kSpace = R"(\s\x{85})";

#if GENIEX_TOKENIZER_HAVE_ICU
Result<std::string> nfd(std::string_view text) {
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* norm = unorm2_getNFDInstance(&err);
  if (U_FAILURE(err)) return internal_error("icu: no NFD normalizer");
  int32_t n16 = 0;
  err = U_ZERO_ERROR;
  u_strFromUTF8(nullptr, 0, &n16, text.data(), static_cast<int32_t>(text.size()), &err);
  std::u16string src(static_cast<size_t>(n16), u'\0');
  err = U_ZERO_ERROR;
  u_strFromUTF8(reinterpret_cast<UChar*>(src.data()), n16, nullptr, text.data(),
                static_cast<int32_t>(text.size()), &err);
  if (U_FAILURE(err)) return invalid_argument("icu: cannot convert text to UTF-16");
  err = U_ZERO_ERROR;
  const int32_t nd =
      unorm2_normalize(norm, reinterpret_cast<const UChar*>(src.data()), n16, nullptr, 0, &err);
  std::u16string dst(static_cast<size_t>(nd), u'\0');
  err = U_ZERO_ERROR;
  unorm2_normalize(norm, reinterpret_cast<const UChar*>(src.data()), n16,
                   reinterpret_cast<UChar*>(dst.data()), nd, &err);
  if (U_FAILURE(err)) return internal_error("icu: NFD normalization failed");
  int32_t n8 = 0;
  err = U_ZERO_ERROR;
  u_strToUTF8(nullptr, 0, &n8, reinterpret_cast<const UChar*>(dst.data()), nd, &err);
  std::string out(static_cast<size_t>(n8), '\0');
  err = U_ZERO_ERROR;
  u_strToUTF8(out.data(), n8, nullptr, reinterpret_cast<const UChar*>(dst.data()), nd, &err);
  if (U_FAILURE(err)) return internal_error("icu: cannot convert text to UTF-8");
  return out;
}
#endif

}  // namespace

Result<WpmEncoder> WpmEncoder::create(const Vocab& v) {
  WpmEncoder e;
  std::string drop = std::string(R"([\x{0}\x{FFFD}]|(?![)") + kSpace + R"(])\p{C})";
  if (v.strip_accents) drop += R"(|\p{Mn})";
  GENIEX_ASSIGN_OR_RETURN(e.drop_, Regex::compile(drop));
  GENIEX_ASSIGN_OR_RETURN(e.lower_, Regex::compile(R"((?s).+)"));
  const std::string words =
      std::string("[") + kPunct + "]|[" + kCjk + "]|[^" + kSpace + kPunct + kCjk + "]+";
  GENIEX_ASSIGN_OR_RETURN(e.words_, Regex::compile(words));
  return e;
}

Status WpmEncoder::encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) const {
  std::string norm(text);
#if GENIEX_TOKENIZER_HAVE_ICU
  if (v.strip_accents) {
    GENIEX_ASSIGN_OR_RETURN(norm, nfd(norm));
  }
#endif
  GENIEX_ASSIGN_OR_RETURN(norm, drop_->replace_all(norm, ""));
  if (v.lowercase) {
    GENIEX_ASSIGN_OR_RETURN(norm, lower_->replace_all(norm, "\\L$0"));
  }
  std::vector<std::string_view> words;
  std::string_view nv(norm);
  GENIEX_TRY(words_->for_each_match(
      nv, [&](size_t b, size_t e) { words.push_back(nv.substr(b, e - b)); }));

  std::string word1;
  for (std::string_view word : words) {
    word1.assign("\xE2\x96\x81");
    word1.append(word);
    const size_t n = word1.size();
    const size_t start = out.size();
    for (size_t i = 0; i < n; ++i) {
      bool match = false;
      for (size_t j = std::min(n, i + v.max_token_len + 1); j > i; --j) {
        const int32_t id = v.find(std::string_view(word1).substr(i, j - i));
        if (id != kNoToken) {
          out.push_back(id);
          match = true;
          i = j - 1;
          break;
        }
      }
      if (!match) {  // the word cannot be covered: drop its pieces
        out.resize(start);
        break;
      }
    }
    if (out.size() == start && v.unk != kNoToken) out.push_back(v.unk);
  }
  return {};
}

}  // namespace geniex::tokenizer::detail
