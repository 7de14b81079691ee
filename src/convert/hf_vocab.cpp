#include "convert/hf_vocab.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "convert/json_file.h"
#include "convert/spm_model.h"
#include "core/regular_file.h"

namespace geniex::convert {
namespace {

using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

// GGUF token types (llama_token_type).
constexpr int64_t kTokenNormal = 1;
constexpr int64_t kTokenControl = 3;
constexpr int64_t kTokenUserDefined = 4;
constexpr int64_t kTokenUnused = 5;

constexpr std::string_view kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A string field, or the "content" of an AddedToken object; nullopt otherwise.
std::optional<std::string> token_text(const json& obj, const std::string& key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    const auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  return std::nullopt;
}

// obj[key] when obj is an object and the value has the wanted kind; the fallback otherwise
// (nlohmann's value() throws on a kind mismatch).
std::string str_field(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string{};
}
bool bool_field(const json& obj, const char* key) {
  if (!obj.is_object()) return false;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

std::string special_id_of(const json& entry) {  // {"SpecialToken": {"id": "<s>"}} -> "<s>"
  if (!entry.is_object()) return {};
  const auto st = entry.find("SpecialToken");
  if (st == entry.end() || !st->is_object()) return {};
  const auto id = st->find("id");
  return id != st->end() && id->is_string() ? id->get<std::string>() : std::string{};
}

std::string sequence_id_of(const json& entry) {  // {"Sequence": {"id": "A"}} -> "A"
  if (!entry.is_object()) return {};
  const auto s = entry.find("Sequence");
  if (s == entry.end() || !s->is_object()) return {};
  const auto id = s->find("id");
  return id != s->end() && id->is_string() ? id->get<std::string>() : std::string{};
}

bool looks_special(const std::string& t) {  // llama.cpp's does_token_look_special
  auto wrapped = [&](std::string_view a, std::string_view b) {
    return t.size() >= a.size() + b.size() && t.starts_with(a) && t.ends_with(b);
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

// Ordered "first setting wins" maps, as gguf-py's SpecialVocab dicts.
template <typename T>
struct OrderedMap {
  std::vector<std::pair<std::string, T>> items;
  T* get(const std::string& k) {
    for (auto& [key, v] : items) {
      if (key == k) return &v;
    }
    return nullptr;
  }
  void set(const std::string& k, T v) {
    if (T* p = get(k)) {
      *p = v;
    } else {
      items.emplace_back(k, v);
    }
  }
  void set_default(const std::string& k, T v) {
    if (get(k) == nullptr) items.emplace_back(k, v);
  }
};

// SpecialVocab (gguf-py vocab.py): special token ids, add_*_token flags, chat template.
struct SpecialVocab {
  std::vector<std::string> types{"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
  OrderedMap<int64_t> ids;
  OrderedMap<bool> add;
  std::optional<std::string> chat_template;
  std::optional<bool> lowercase, strip_accents;

  std::optional<size_t> n_vocab;  // ids at or above it are skipped (SPM vocabularies)

  Status set_id(const std::string& typ, const json& id) {
    if (!id.is_number_integer()) return {};
    const auto v = id.get<int64_t>();
    if (v < 0) return invalid_argument("invalid id for special token " + typ);
    if (n_vocab && static_cast<uint64_t>(v) >= *n_vocab) return {};
    ids.set_default(typ, v);
    return {};
  }

  void parse_normalizer(const json& n) {
    if (!n.is_object()) return;
    const std::string type = str_field(n, "type");
    if (type == "Lowercase") {
      lowercase = true;
    } else if (type == "StripAccents") {
      strip_accents = true;
    } else if (type == "BertNormalizer") {
      if (n.contains("lowercase") && n["lowercase"].is_boolean())
        lowercase = n["lowercase"].get<bool>();
      if (n.contains("strip_accents") && n["strip_accents"].is_boolean()) {
        strip_accents = n["strip_accents"].get<bool>();
      }
    } else if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
      for (const auto& sub : n["normalizers"]) parse_normalizer(sub);
    }
  }

  // The TemplateProcessing heuristics of SpecialVocab._try_load_from_tokenizer_json.
  void template_processing(const json& proc, bool have_tc, std::map<std::string, std::string>& tc) {
    const json empty = json::array();
    const json& single =
        proc.contains("single") && proc["single"].is_array() ? proc["single"] : empty;
    json pair = proc.contains("pair") && proc["pair"].is_array() ? proc["pair"] : empty;
    std::string first, last;
    if (single.size() > 1) {
      first = special_id_of(single.front());
      if (!first.empty()) {
        if (!have_tc) {
          tc["bos_token"] = first;
        } else if (first != tc["bos_token"] && first != tc["cls_token"]) {
          if (tc["bos_token"].empty()) tc["bos_token"] = first;
          if (tc["cls_token"].empty()) tc["cls_token"] = first;
        }
        add.set("bos", first == tc["bos_token"] || first == tc["cls_token"]);
      }
      last = special_id_of(single.back());
      if (!last.empty()) {
        if (!have_tc) {
          tc["eos_token"] = last;
        } else if (last != tc["eos_token"]) {
          for (const char* extra : {"eot", "eom"}) {
            if (std::find(types.begin(), types.end(), extra) == types.end()) {
              types.emplace_back(extra);
              tc[std::string(extra) + "_token"] = tc["eos_token"];
              break;
            }
          }
          tc["eos_token"] = last;
        }
        add.set("eos", last == tc["eos_token"]);
      }
    }
    if (pair.empty()) return;
    size_t start = (!first.empty() && special_id_of(pair.front()) == first) ? 1 : 0;
    size_t stop =
        (!last.empty() && special_id_of(pair.back()) == last) ? pair.size() - 1 : pair.size();
    if (stop <= start) return;
    std::vector<json> mid(pair.begin() + static_cast<std::ptrdiff_t>(start),
                          pair.begin() + static_cast<std::ptrdiff_t>(stop));
    if (mid.empty() || sequence_id_of(mid.front()) != "A" || sequence_id_of(mid.back()) != "B")
      return;
    if (mid.size() < 3) return;
    std::vector<json> inner(mid.begin() + 1, mid.end() - 1);
    bool add_sep = false;
    const std::string e0 = special_id_of(inner[0]);
    const std::string& sep = tc["sep_token"];
    const std::string& eos = tc["eos_token"];
    if (!e0.empty() && (e0 == sep || e0 == eos) && last.empty()) add_sep = true;
    if (inner.size() == 2) {
      const std::string e1 = special_id_of(inner[1]);
      if (!e1.empty() && (e1 == sep || e1 == eos)) add_sep = true;
    }
    add.set("sep", add_sep);
    if (add_sep && sep.empty() && have_tc) tc["sep_token"] = eos;
  }
};

Result<std::string> read_text_if_exists(const std::string& path) {
  auto f = RegularFile::open(path);
  if (!f.ok()) {
    if (f.status().code() == StatusCode::kNotFound) return std::string{};
    return f.status();
  }
  return f->read_all(kMaxJsonFileBytes, "chat template");
}

Status load_special_vocab(const VocabInputs& in, const json& tj, SpecialVocab& sv) {
  GENIEX_ASSIGN_OR_RETURN(std::optional<json> tc_json,
                          read_json_file_if_exists(in.dir + "/tokenizer_config.json"));
  const bool have_tc = tc_json.has_value() && tc_json->is_object() && !tc_json->empty();
  std::map<std::string, std::string> tc;  // <typ>_token -> content ("" = unset)
  if (have_tc) {
    for (const char* k : {"bos_token", "cls_token", "eos_token", "sep_token"}) {
      tc[k] = token_text(*tc_json, k).value_or("");
    }
  }
  if (tc["bos_token"].empty() && !tc["cls_token"].empty() && have_tc)
    tc["bos_token"] = tc["cls_token"];
  if (tc["eos_token"].empty() && !tc["sep_token"].empty() && have_tc)
    tc["eos_token"] = tc["sep_token"];
  if (tj.contains("normalizer")) sv.parse_normalizer(tj["normalizer"]);
  if (tj.contains("post_processor") && tj["post_processor"].is_object()) {
    const json& pp = tj["post_processor"];
    std::vector<json> procs;
    if (pp.contains("processors") && pp["processors"].is_array()) {
      procs.assign(pp["processors"].begin(), pp["processors"].end());
    } else {
      procs.push_back(pp);
    }
    for (const json& p : procs) {
      if (!p.is_object()) continue;
      const std::string type = str_field(p, "type");
      if (type == "ByteLevel") {
        sv.add.set_default("bos", false);
        sv.add.set_default("eos", false);
      } else if (type == "RobertaProcessing") {
        sv.add.set("bos", true);
        sv.add.set("eos", true);
        sv.add.set("sep", true);
      } else if (type == "TemplateProcessing") {
        sv.template_processing(p, have_tc, tc);
      }
    }
  }
  if (!have_tc) return {};
  // Chat template: tokenizer_config.json, else chat_template.jinja, else chat_template.json.
  const auto ct = tc_json->find("chat_template");
  if (ct != tc_json->end() && ct->is_string()) {
    sv.chat_template = ct->get<std::string>();
  } else if (ct == tc_json->end()) {
    GENIEX_ASSIGN_OR_RETURN(std::string jinja,
                            read_text_if_exists(in.dir + "/chat_template.jinja"));
    if (!jinja.empty()) {
      sv.chat_template = std::move(jinja);
    } else {
      GENIEX_ASSIGN_OR_RETURN(std::optional<json> cj,
                              read_json_file_if_exists(in.dir + "/chat_template.json"));
      if (cj && cj->is_object() && cj->contains("chat_template") &&
          (*cj)["chat_template"].is_string()) {
        sv.chat_template = (*cj)["chat_template"].get<std::string>();
      }
    }
  } else if (!ct->is_null()) {
    return unimplemented(in.dir +
                         "/tokenizer_config.json: chat_template that is not a string "
                         "(a list of named templates) is not supported yet");
  }
  const json added = tj.contains("added_tokens") && tj["added_tokens"].is_array()
                         ? tj["added_tokens"]
                         : json::array();
  for (const std::string& typ : sv.types) {
    const auto flag = tc_json->find("add_" + typ + "_token");
    if (flag != tc_json->end() && flag->is_boolean()) sv.add.set_default(typ, flag->get<bool>());
    std::optional<std::string> content = token_text(*tc_json, typ + "_token");
    if (const auto it = tc.find(typ + "_token"); it != tc.end() && !it->second.empty()) {
      content = it->second;  // possibly rewritten by the post-processor heuristics
    }
    if (!content) continue;
    for (const json& a : added) {
      if (a.is_object() && str_field(a, "content") == *content && a.contains("id")) {
        GENIEX_TRY(sv.set_id(typ, a["id"]));
        break;
      }
    }
  }
  return {};
}

// gguf-py's SpecialVocab: special token ids, add_*_token flags, chat template, normalizer flags
// (`tj` is tokenizer.json, or null when there is none).
Status add_special_vocab(const VocabInputs& in, const json& tj, std::optional<size_t> n_vocab,
                         gguf::GgufWriter& w) {
  SpecialVocab sv;
  sv.n_vocab = n_vocab;
  GENIEX_TRY(load_special_vocab(in, tj, sv));
  if (in.config != nullptr) {  // config.json <typ>_token_id, where the tokenizer named none
    for (const std::string& typ : sv.types) {
      const auto it = in.config->find(typ + "_token_id");
      if (it != in.config->end()) GENIEX_TRY(sv.set_id(typ, *it));
    }
  }

  static const std::map<std::string, std::string> kIdKeys = {
      {"bos", "tokenizer.ggml.bos_token_id"},     {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"}, {"sep", "tokenizer.ggml.seperator_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"}, {"mask", "tokenizer.ggml.mask_token_id"},
      {"eot", "tokenizer.ggml.eot_token_id"},     {"eom", "tokenizer.ggml.eom_token_id"}};
  // gguf-py has no key for a cls id or for add_<typ>_token beyond bos/eos/sep: skipped too.
  for (const auto& [typ, id] : sv.ids.items) {
    const auto key = kIdKeys.find(typ);
    if (key == kIdKeys.end()) continue;
    w.set(key->second, Value::of_uint(ValueType::kUint32, static_cast<uint64_t>(id)));
  }
  for (const auto& [typ, flag] : sv.add.items) {
    if (typ == "bos" || typ == "eos" || typ == "sep") {
      w.set("tokenizer.ggml.add_" + typ + "_token", Value::of_bool(flag));
    }
  }
  if (sv.chat_template) w.set("tokenizer.chat_template", Value::of_string(*sv.chat_template));
  if (sv.lowercase) w.set("tokenizer.ggml.normalizer.lowercase", Value::of_bool(*sv.lowercase));
  if (sv.strip_accents) {
    w.set("tokenizer.ggml.normalizer.strip_accents", Value::of_bool(*sv.strip_accents));
  }
  return {};
}

}  // namespace

Result<std::string> detect_bpe_pre(const nlohmann::json& tj) {
  std::vector<std::string> patterns;
  if (tj.contains("pre_tokenizer") && tj["pre_tokenizer"].is_object()) {
    const json& pt = tj["pre_tokenizer"];
    std::vector<json> parts;
    if (pt.contains("pretokenizers") && pt["pretokenizers"].is_array()) {
      parts.assign(pt["pretokenizers"].begin(), pt["pretokenizers"].end());
    } else {
      parts.push_back(pt);
    }
    for (const json& p : parts) {
      if (p.is_object() && str_field(p, "type") == "Split" && p.contains("pattern") &&
          p["pattern"].is_object() && p["pattern"].contains("Regex") &&
          p["pattern"]["Regex"].is_string()) {
        patterns.push_back(p["pattern"]["Regex"].get<std::string>());
      }
    }
  }
  if (patterns.size() == 1 && patterns[0] == kLlama3Split) return std::string("llama-bpe");
  if (patterns.size() == 1 && patterns[0] == kQwen2Split) return std::string("qwen2");
  return unimplemented(
      "tokenizer.json: unknown BPE pre-tokenizer (known: the Llama 3 and Qwen2 split regexes); "
      "name it with --tokenizer-pre");
}

Status add_bpe_vocab(const VocabInputs& in, gguf::GgufWriter& w) {
  const std::string tj_path = in.dir + "/tokenizer.json";
  auto tj_or = read_json_file(tj_path);
  if (!tj_or.ok()) {
    if (tj_or.status().code() == StatusCode::kNotFound) {
      return not_found("missing " + tj_path +
                       " (the tokenizer; tokenizer.model-only "
                       "checkpoints are not supported yet)");
    }
    return tj_or.status();
  }
  const json tj = std::move(tj_or).value();
  const auto model = tj.find("model");
  if (model == tj.end() || !model->is_object() || str_field(*model, "type") != "BPE" ||
      !model->contains("vocab") || !(*model)["vocab"].is_object()) {
    return unimplemented(tj_path +
                         ": only BPE models (\"model\": {\"type\": \"BPE\"}) are supported");
  }
  std::string pre = in.tokenizer_pre;
  if (pre.empty()) {
    GENIEX_ASSIGN_OR_RETURN(pre, detect_bpe_pre(tj));
  }

  // Ids -> (text, type): the base vocabulary, then added tokens on top (as AutoTokenizer).
  std::vector<std::string> tokens(in.vocab_size);
  std::vector<int64_t> types(in.vocab_size, kTokenUnused);
  std::vector<bool> present(in.vocab_size, false);
  for (const auto& [text, id] : (*model)["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      return data_loss(tj_path + ": vocab id of '" + text + "' is not a non-negative integer");
    }
    const auto i = static_cast<uint64_t>(id.get<int64_t>());
    if (i >= in.vocab_size) {
      return data_loss(tj_path + ": token id " + std::to_string(i) +
                       " is not below config.json vocab_size " + std::to_string(in.vocab_size));
    }
    tokens[i] = text;
    types[i] = kTokenNormal;
    present[i] = true;
  }
  if (tj.contains("added_tokens") && tj["added_tokens"].is_array()) {
    for (const json& a : tj["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          !a.contains("content") || !a["content"].is_string()) {
        return data_loss(tj_path + ": an added_tokens entry lacks an integer id or a content");
      }
      const int64_t id = a["id"].get<int64_t>();
      if (id < 0 || static_cast<uint64_t>(id) >= in.vocab_size) {
        return data_loss(tj_path + ": added token id " + std::to_string(id) +
                         " is not below config.json vocab_size " + std::to_string(in.vocab_size));
      }
      const auto i = static_cast<size_t>(id);
      std::string text = a["content"].get<std::string>();
      const bool special = bool_field(a, "special");
      if (special || looks_special(text)) {
        types[i] = kTokenControl;
      } else {
        text = replace_all(std::move(text), "\xe2\x96\x81", " ");  // pre-normalized spaces
        types[i] = kTokenUserDefined;
      }
      tokens[i] = std::move(text);
      present[i] = true;
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!present[i]) tokens[i] = "[PAD" + std::to_string(i) + "]";
  }

  std::vector<std::string> merges;
  if (const auto m = model->find("merges"); m != model->end() && m->is_array()) {
    for (const json& e : *m) {
      if (e.is_string()) {
        merges.push_back(e.get<std::string>());
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        // Pair form (transformers >= 4.45): spaces inside a part become U+0120, as llama.cpp.
        merges.push_back(replace_all(e[0].get<std::string>(), " ", "\xc4\xa0") + " " +
                         replace_all(e[1].get<std::string>(), " ", "\xc4\xa0"));
      } else {
        return data_loss(tj_path + ": a merges entry is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
  }

  w.set("tokenizer.ggml.model", Value::of_string("gpt2"));
  w.set("tokenizer.ggml.pre", Value::of_string(pre));
  w.set("tokenizer.ggml.tokens", Value::of_string_array(std::move(tokens)));
  w.set("tokenizer.ggml.token_type", Value::of_int_array(ValueType::kInt32, std::move(types)));
  if (!merges.empty()) {
    w.set("tokenizer.ggml.merges", Value::of_string_array(std::move(merges)));
  }
  return add_special_vocab(in, tj, std::nullopt, w);
}

Status add_spm_vocab(const VocabInputs& in, gguf::GgufWriter& w) {
  const std::string path = in.dir + "/tokenizer.model";
  GENIEX_ASSIGN_OR_RETURN(RegularFile f, RegularFile::open(path));
  GENIEX_ASSIGN_OR_RETURN(std::string bytes, f.read_all(kMaxJsonFileBytes, "tokenizer.model"));
  auto parsed = parse_spm_model(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!parsed.ok()) return data_loss(path + ": " + parsed.status().message());
  const std::vector<SpmPiece>& pieces = *parsed;
  const size_t n = in.vocab_size != 0 ? in.vocab_size : pieces.size();
  // llama.cpp's _create_vocab_sentencepiece: unset ids are unused "[PADi]" pieces.
  std::vector<std::string> tokens(n);
  std::vector<double> scores(n, -10000.0);
  std::vector<int64_t> types(n, kTokenUnused);
  for (size_t i = 0; i < n; ++i) tokens[i] = "[PAD" + std::to_string(i) + "]";
  for (size_t i = 0; i < pieces.size() && i < n; ++i) {
    tokens[i] = pieces[i].text;
    scores[i] = pieces[i].score;
    switch (pieces[i].type) {
      case SpmType::kUnknown: types[i] = 2; break;
      case SpmType::kControl: types[i] = kTokenControl; break;
      case SpmType::kUnused: types[i] = kTokenUnused; break;
      case SpmType::kByte: types[i] = 6; break;
      default: types[i] = kTokenNormal; break;  // user-defined pieces too, as llama.cpp
    }
  }
  GENIEX_ASSIGN_OR_RETURN(std::optional<json> added,
                          read_json_file_if_exists(in.dir + "/added_tokens.json"));
  if (added && added->is_object()) {
    for (const auto& [text, id] : added->items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0) {
        return data_loss(in.dir + "/added_tokens.json: id of '" + text + "' is not an integer");
      }
      const auto i = static_cast<uint64_t>(id.get<int64_t>());
      if (i >= n) continue;
      tokens[i] = text;
      scores[i] = -1000.0;
      types[i] = kTokenUserDefined;
    }
  }
  GENIEX_ASSIGN_OR_RETURN(std::optional<json> tc,
                          read_json_file_if_exists(in.dir + "/tokenizer_config.json"));
  if (tc && tc->is_object() && tc->contains("added_tokens_decoder") &&
      (*tc)["added_tokens_decoder"].is_object()) {
    for (const auto& [key, data] : (*tc)["added_tokens_decoder"].items()) {
      uint64_t i = 0;
      const auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), i);
      if (ec != std::errc() || ptr != key.data() + key.size() || !data.is_object() ||
          !data.contains("content") || !data["content"].is_string()) {
        return data_loss(in.dir + "/tokenizer_config.json: bad added_tokens_decoder entry '" + key +
                         "'");
      }
      if (i >= n) continue;
      std::string text = data["content"].get<std::string>();
      const auto sp = data.find("special");
      if ((sp != data.end() && sp->is_boolean() && sp->get<bool>()) || looks_special(text)) {
        types[i] = kTokenControl;
      } else {
        text = replace_all(std::move(text), "\xe2\x96\x81", " ");
        types[i] = kTokenUserDefined;
      }
      scores[i] = -1000.0;
      tokens[i] = std::move(text);
    }
  }
  GENIEX_ASSIGN_OR_RETURN(std::optional<json> tj,
                          read_json_file_if_exists(in.dir + "/tokenizer.json"));
  w.set("tokenizer.ggml.model", Value::of_string("llama"));
  w.set("tokenizer.ggml.pre", Value::of_string("default"));
  w.set("tokenizer.ggml.tokens", Value::of_string_array(std::move(tokens)));
  w.set("tokenizer.ggml.scores", Value::of_float_array(ValueType::kFloat32, std::move(scores)));
  w.set("tokenizer.ggml.token_type", Value::of_int_array(ValueType::kInt32, std::move(types)));
  return add_special_vocab(in, tj ? *tj : json(), n, w);
}

}  // namespace geniex::convert
