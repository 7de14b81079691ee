#include "convert/convert.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>

#include "convert/arch.h"
#include "convert/hf_vocab.h"
#include "convert/mmproj.h"
#include "convert/safetensors.h"
#include "convert/text_params.h"
#include "gguf/gguf_stream_writer.h"
#include "gguf/gguf_writer.h"

namespace geniex::convert {
namespace {

using gguf::Value;
using gguf::ValueType;

OutType resolve_outtype(OutType t, const SafetensorsModel& st) {
  if (t != OutType::kAuto) return t;
  for (const StTensor* s : st.tensors()) {  // the first tensor of 2+ dims decides
    if (s->shape.size() < 2) continue;
    if (s->dtype == StDType::kBF16) return OutType::kBF16;
    if (s->dtype == StDType::kF16) return OutType::kF16;
    break;
  }
  return OutType::kF16;
}

// llama.cpp's TextModel.filter_tensors: a multimodal checkpoint's vision / audio / projector
// tensors are not the text model's; "language_model." is dropped from the rest.
std::optional<std::string> text_tensor_name(const std::string& name) {
  static constexpr std::string_view kPrefixes[] = {
      "mlp",     "vit.",       "vpm.",           "siglip2.",          "conformer.",
      "merger.", "resampler.", "sound_encoder.", "sound_projection.", "speech_embeddings."};
  static constexpr std::string_view kInfixes[] = {"visual.",         "vision.",
                                                  "audio.",          "talker.",
                                                  "vision_",         "audio_",
                                                  "token2wav.",      "code2wav.",
                                                  "projector.",      "pre_mm_projector_norm",
                                                  "image_newline",   "view_seperator",
                                                  "patch_embed",     "patch_embedding",
                                                  "patch_merger.",   "patch_merge_mlp.",
                                                  "model.connector."};
  for (std::string_view p : kPrefixes) {
    if (name.starts_with(p)) return std::nullopt;
  }
  for (std::string_view p : kInfixes) {
    if (name.find(p) != std::string::npos) return std::nullopt;
  }
  std::string out = name;
  constexpr std::string_view kLm = "language_model.";
  for (size_t at = out.find(kLm); at != std::string::npos; at = out.find(kLm, at)) {
    out.erase(at, kLm.size());
  }
  return out;
}

Status add_tensor(gguf::GgufStreamWriter& w, ConvTensor& t, OutType out, uint64_t& n_params) {
  std::vector<uint64_t> ne(t.shape.rbegin(), t.shape.rend());  // GGML order: innermost first
  if (ne.empty()) ne.push_back(1);
  const uint64_t row = ne[0];
  const GgmlType type = choose_type(t.name, t.shape.size(), row, out);
  GENIEX_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, encode(t.values, row, type));
  n_params += t.values.size();
  return w.add_tensor(t.name, type, std::move(ne), bytes);
}

}  // namespace

std::string size_label(uint64_t n) {
  const auto x = static_cast<double>(n);
  double scaled = x * 1e-3;
  const char* suffix = "K";
  if (x > 1e12) {
    scaled = x * 1e-12;
    suffix = "T";
  } else if (x > 1e9) {
    scaled = x * 1e-9;
    suffix = "B";
  } else if (x > 1e6) {
    scaled = x * 1e-6;
    suffix = "M";
  }
  std::string digits = std::to_string(static_cast<uint64_t>(std::nearbyint(scaled)));
  digits.erase(0, digits.find_first_not_of('0'));
  const int fix = std::max(2 - static_cast<int>(digits.size()), 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", fix, scaled, suffix);
  return buf;
}

namespace {

// ^(v\d+(\.\d+)*|\d.*)$ of gguf-py's metadata heuristics, without <regex>.
bool looks_like_version(const std::string& w) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!w.empty() && digit(w[0])) return true;
  if (w.size() < 2 || w[0] != 'v' || !digit(w[1])) return false;
  bool after_dot = false;
  for (size_t i = 1; i < w.size(); ++i) {
    if (digit(w[i])) {
      after_dot = false;
    } else if (w[i] == '.' && !after_dot && digit(w[i - 1])) {
      after_dot = true;
    } else {
      return false;
    }
  }
  return !after_dot;
}

}  // namespace

std::string name_from_dir(const std::string& dir) {
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (const size_t slash = base.rfind('/'); slash != std::string::npos)
    base = base.substr(slash + 1);
  for (char& c : base) {
    if (c == '-') c = ' ';
  }
  std::string out;
  size_t i = 0;
  while (i < base.size()) {
    while (i < base.size() && base[i] == ' ') ++i;
    size_t j = i;
    while (j < base.size() && base[j] != ' ') ++j;
    if (j == i) break;
    std::string word = base.substr(i, j - i);
    const bool lower =
        std::any_of(word.begin(), word.end(),
                    [](char c) { return std::islower(static_cast<unsigned char>(c)); }) &&
        std::none_of(word.begin(), word.end(),
                     [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
    if (lower && !looks_like_version(word)) {
      bool start = true;  // str.title(): upper after any non-letter
      for (char& c : word) {
        const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
        if (alpha && start) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        start = !alpha;
      }
    }
    out += (out.empty() ? "" : " ") + word;
    i = j;
  }
  return out;
}

Result<ConvertReport> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                         const ConvertOptions& opts) {
  GENIEX_ASSIGN_OR_RETURN(HfConfig cfg, load_hf_config(hf_dir));
  GENIEX_ASSIGN_OR_RETURN(std::unique_ptr<ArchConverter> arch, make_arch_converter(cfg));
  GENIEX_ASSIGN_OR_RETURN(SafetensorsModel st, SafetensorsModel::open_dir(hf_dir));
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_block, cfg.require_uint({"n_layers", "num_hidden_layers",
                                                              "n_layer", "num_layers"}));
  GENIEX_ASSIGN_OR_RETURN(uint64_t vocab_size, cfg.require_uint({"vocab_size"}));
  if (n_block > UINT32_MAX || vocab_size > UINT32_MAX) {
    return invalid_argument(cfg.path + ": layer count or vocab_size out of range");
  }

  ConvertReport report;
  report.hf_arch = cfg.hf_arch;
  report.gguf_arch = arch->gguf_arch();
  report.outtype = resolve_outtype(opts.outtype, st);

  gguf::GgufWriter w;
  w.set("general.architecture", Value::of_string(report.gguf_arch));
  w.set("general.type", Value::of_string("model"));
  const std::string model_name = opts.model_name.empty() ? name_from_dir(hf_dir) : opts.model_name;
  w.set("general.name", Value::of_string(model_name));
  w.set("general.size_label", Value::of_string(""));  // known once the tensors are in
  GENIEX_TRY(add_text_params(cfg, report.gguf_arch, static_cast<uint32_t>(n_block),
                             file_type_of(report.outtype), w));
  GENIEX_TRY(arch->add_params(cfg, w));
  w.set("general.quantization_version", Value::of_uint(ValueType::kUint32, 2));
  VocabInputs vin;
  vin.dir = hf_dir;
  vin.config = &cfg.params;
  vin.vocab_size = static_cast<uint32_t>(vocab_size);
  vin.tokenizer_pre = opts.tokenizer_pre;
  GENIEX_TRY(arch->add_vocab(vin, w));

  // Tensors stream to disk one at a time (the metadata stays in `w` until the end).
  GENIEX_ASSIGN_OR_RETURN(gguf::GgufStreamWriter tw, gguf::GgufStreamWriter::create(out_path));
  GENIEX_ASSIGN_OR_RETURN(std::vector<ConvTensor> extra, arch->extra_tensors());
  for (ConvTensor& t : extra) GENIEX_TRY(add_tensor(tw, t, report.outtype, report.n_params));
  for (const StTensor* s : st.tensors()) {
    const std::optional<std::string> hf_name = text_tensor_name(s->name);
    if (!hf_name) continue;
    GENIEX_ASSIGN_OR_RETURN(std::optional<std::string> name, arch->map_name(*hf_name));
    if (!name) continue;
    ConvTensor t;
    t.name = std::move(*name);
    t.shape = s->shape;
    GENIEX_ASSIGN_OR_RETURN(t.values, decode_to_f32(*s));
    GENIEX_TRY(arch->transform(*hf_name, t));
    GENIEX_TRY(add_tensor(tw, t, report.outtype, report.n_params));
    ++report.n_tensors;
  }
  report.n_tensors += extra.size();
  w.set("general.size_label", Value::of_string(size_label(report.n_params)));
  if (!opts.mmproj_path.empty()) {
    GENIEX_ASSIGN_OR_RETURN(MmprojReport mm, convert_mmproj(hf_dir, cfg, st, report.outtype,
                                                            model_name, opts.mmproj_path));
    report.mmproj_tensors = mm.n_tensors;
  }
  if (Status s = tw.finish(w.metadata()); !s.ok()) {
    if (!opts.mmproj_path.empty()) std::remove(opts.mmproj_path.c_str());
    return s;
  }
  if (std::FILE* f = std::fopen(out_path.c_str(), "rb")) {
    std::fseek(f, 0, SEEK_END);
    report.file_bytes = static_cast<uint64_t>(std::ftell(f));
    std::fclose(f);
  }
  return report;
}

}  // namespace geniex::convert
