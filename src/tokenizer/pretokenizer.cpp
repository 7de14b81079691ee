#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <initializer_list>
#include <utility>

namespace geniex::tokenizer {
namespace {

// The HF patterns write the contractions as (?i:'s|'t|...); PCRE2 supports that directly.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kChatGlm4 = kLlama3;
constexpr const char* kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
constexpr const char* kSeedCoder =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kDeepseek3 =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// deepseek-llm (HF tokenizer.json of deepseek-llm-7b-base): explicit letter ranges.
constexpr const char* kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
constexpr const char* kDeepseekPunct =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
constexpr const char* kDeepseekCjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

struct PreSpec {
  std::vector<const char*> patterns;
  PreTokenizerTraits traits;
};

PreSpec spec_for(std::string_view pre, bool* found) {
  *found = true;
  auto in = [&](std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), pre) != names.end();
  };
  PreTokenizerTraits t;
  if (in({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
          "jina-v5-nano"})) {
    t.ignore_merges = true;
    t.add_bos = true;
    return {{kLlama3}, t};
  }
  if (in({"dbrx", "smaug-bpe"})) return {{kLlama3}, t};
  if (in({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan",
          "solar-open"})) {
    t.clean_spaces = false;
    return {{kQwen2}, t};
  }
  if (in({"qwen35"})) {
    t.clean_spaces = false;
    return {{kQwen35}, t};
  }
  if (in({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
          "mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling",
          "jina-v1-en", "jina-v2-code", "roberta-bpe"})) {
    return {{kGpt2}, t};
  }
  if (in({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b",
          "mellum2"})) {
    if (pre == "command-r") t.clean_spaces = false;
    return {{R"(\p{N})", kGpt2}, t};
  }
  if (pre == "falcon") {
    return {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, t};
  }
  if (pre == "deepseek-llm") {
    t.clean_spaces = false;
    return {{"[\r\n]", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"}, t};
  }
  if (pre == "deepseek-coder") {
    t.clean_spaces = false;
    return {{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}, t};
  }
  if (in({"deepseek-v3", "hunyuan-dense", "joyai-llm"})) {
    t.clean_spaces = false;
    return {
        {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)", kDeepseek3},
        t};
  }
  if (in({"tekken"})) {
    t.ignore_merges = true;
    t.add_bos = true;
    return {{kTekken}, t};
  }
  if (in({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) return {{kGpt4o}, t};
  if (in({"chatglm-bpe"})) return {{kChatGlm4}, t};
  if (in({"poro-chat", "bloom", "gpt3-finnish"})) return {{kBloom}, t};
  if (in({"viking"})) return {{kBloom, R"(\p{N})"}, t};
  if (in({"seed-coder"})) return {{kSeedCoder}, t};
  if (pre.empty() || pre == "default") {
    return {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}, t};
  }
  *found = false;
  return {};
}

}  // namespace

std::vector<std::string> known_pre_tokenizers() {
  return {"default",
          "llama3",
          "llama-v3",
          "llama-bpe",
          "falcon3",
          "falcon-h1",
          "pixtral",
          "midm-2.0",
          "lfm2",
          "jina-v5-nano",
          "dbrx",
          "smaug-bpe",
          "qwen2",
          "deepseek-r1-qwen",
          "kormo",
          "f2llmv2",
          "megrez",
          "stablelm2",
          "hunyuan",
          "solar-open",
          "qwen35",
          "gpt-2",
          "phi-2",
          "jina-es",
          "jina-de",
          "gigachat",
          "jina-v2-es",
          "jina-v2-de",
          "a.x-4.0",
          "mellum",
          "modern-bert",
          "exaone4",
          "mpt",
          "olmo",
          "jais",
          "trillion",
          "granite-docling",
          "jina-v1-en",
          "jina-v2-code",
          "roberta-bpe",
          "starcoder",
          "refact",
          "command-r",
          "smollm",
          "codeshell",
          "exaone",
          "minerva-7b",
          "mellum2",
          "falcon",
          "deepseek-llm",
          "deepseek-coder",
          "deepseek-v3",
          "hunyuan-dense",
          "joyai-llm",
          "tekken",
          "gpt-4o",
          "llama4",
          "kanana2",
          "talkie",
          "minimax-m2",
          "chatglm-bpe",
          "poro-chat",
          "bloom",
          "gpt3-finnish",
          "viking",
          "seed-coder"};
}

Result<PreTokenizer> PreTokenizer::create(std::string_view pre) {
  bool found = false;
  PreSpec spec = spec_for(pre, &found);
  if (!found) {
    return invalid_argument("tokenizer.ggml.pre: unknown pre-tokenizer '" + std::string(pre) + "'");
  }
  PreTokenizer p;
  p.name_ = pre.empty() ? "default" : std::string(pre);
  p.traits_ = spec.traits;
  for (const char* pattern : spec.patterns) {
    // `$` means end of piece only (HF/onig semantics for these patterns).
    GENIEX_ASSIGN_OR_RETURN(auto re, Regex::compile(pattern, PCRE2_DOLLAR_ENDONLY));
    p.regexes_.push_back(std::move(re));
  }
  return p;
}

Status PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  out.clear();
  if (text.empty()) return {};
  std::vector<std::string_view> cur{text};
  std::vector<std::string_view> next;
  for (const auto& re : regexes_) {
    next.clear();
    for (std::string_view piece : cur) {
      size_t last = 0;
      GENIEX_TRY(re->for_each_match(piece, [&](size_t b, size_t e) {
        if (b > last) next.push_back(piece.substr(last, b - last));
        next.push_back(piece.substr(b, e - b));
        last = e;
      }));
      if (last < piece.size()) next.push_back(piece.substr(last));
    }
    cur.swap(next);
  }
  out = std::move(cur);
  return {};
}

}  // namespace geniex::tokenizer
