#include "cmd_list.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/dtype.h"
#include "gguf/gguf_reader.h"
#include "human_units.h"
#include "model_cache.h"
#include "model_catalog.h"

namespace geniex::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct ListOptions {
  bool json = false;
};

/// What `list` shows of one file; the optionals are empty when the file could not be read.
struct ModelRow {
  std::string name;
  std::string path;
  std::optional<uint64_t> size;
  std::optional<std::string> architecture;
  std::optional<std::string> file_type;      // general.file_type, as llama.cpp names it
  std::optional<std::string> dominant_type;  // the tensor type holding the most weights
  std::optional<uint64_t> parameters;
  std::optional<bool> chat_template;
  std::string error;  // empty when the header parsed
};

// llama.cpp's llama_ftype (general.file_type), as gguf-py's LlamaFileType names it minus the
// MOSTLY_ prefix. Numbers not listed were removed upstream.
std::optional<std::string> file_type_name(uint64_t ftype) {
  static const std::map<uint64_t, std::string_view> kNames = {
      {0, "F32"},      {1, "F16"},      {2, "Q4_0"},       {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},      {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},    {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},    {21, "Q2_K_S"}, {22, "IQ3_XS"},
      {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},    {26, "IQ3_S"},  {27, "IQ3_M"},
      {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},    {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"}, {39, "NVFP4"},  {40, "Q1_0"},
  };
  const auto it = kNames.find(ftype);
  if (it == kNames.end()) return std::nullopt;
  return std::string(it->second);
}

ModelRow describe(const fs::path& path) {
  ModelRow row;
  row.name = path.filename().string();
  row.path = path.string();
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);  // follows symlinks
  if (ec) {
    row.error = fs::is_symlink(path, ec)
                    ? "broken symlink to " + fs::read_symlink(path, ec).string()
                    : "cannot stat: " + ec.message();
    return row;
  }
  row.size = size;
  // The reader maps the file and parses the header; tensor data is never touched.
  Result<gguf::GgufFile> file = gguf::GgufFile::open(path.string());
  if (!file.ok()) {
    // The reader's messages start "gguf: PATH: "; the row already names the file.
    row.error = file.status().message();
    const std::string prefix = "gguf: " + row.path + ": ";
    if (row.error.starts_with(prefix)) row.error.erase(0, prefix.size());
    return row;
  }
  if (Result<std::string> arch = file->get_string("general.architecture"); arch.ok()) {
    row.architecture = *arch;
  }
  if (Result<uint64_t> v = file->get_uint("general.file_type"); v.ok()) {
    row.file_type = file_type_name(*v).value_or("type " + std::to_string(*v));
  }
  std::map<GgmlType, uint64_t> elements;
  uint64_t total = 0;
  for (const gguf::TensorInfo& t : file->tensors()) {
    elements[t.type] += t.n_elements();
    total += t.n_elements();
  }
  row.parameters = total;
  const auto most = std::max_element(elements.begin(), elements.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
  if (most != elements.end()) row.dominant_type = std::string(ggml_type_name(most->first));
  row.chat_template = file->find("tokenizer.chat_template") != nullptr;
  return row;
}

std::vector<ModelRow> scan(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    // Hidden names are pull's temporary files.
    if (p.extension() == ".gguf" && !p.filename().string().starts_with(".")) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  std::vector<ModelRow> rows;
  rows.reserve(files.size());
  for (const fs::path& p : files) rows.push_back(describe(p));
  return rows;
}

template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string render_json(const std::string& dir, const std::vector<ModelRow>& rows) {
  Json models = Json::array();
  for (const ModelRow& r : rows) {
    Json m;
    m["name"] = r.name;
    m["path"] = r.path;
    m["size"] = or_null(r.size);
    m["architecture"] = or_null(r.architecture);
    m["quantization"] = r.file_type ? Json(*r.file_type) : or_null(r.dominant_type);
    m["file_type"] = or_null(r.file_type);
    m["dominant_type"] = or_null(r.dominant_type);
    m["parameters"] = or_null(r.parameters);
    m["chat_template"] = or_null(r.chat_template);
    m["error"] = r.error.empty() ? Json(nullptr) : Json(r.error);
    models.push_back(std::move(m));
  }
  Json root;
  root["dir"] = dir;
  root["models"] = std::move(models);
  return root.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string render_text(const std::string& dir, const std::vector<ModelRow>& rows) {
  if (rows.empty()) {
    return "no models in " + dir +
           "\nfetch one with 'geniex pull NAME' (known: " + catalog_names() + ")\n";
  }
  const std::vector<std::string> header = {"NAME",   "SIZE",     "ARCH", "QUANT",
                                           "PARAMS", "TEMPLATE", "ERROR"};
  std::vector<std::vector<std::string>> table = {header};
  for (const ModelRow& r : rows) {
    const std::string dash = "-";
    table.push_back({r.name, r.size ? human_bytes(*r.size, 1) : dash, r.architecture.value_or(dash),
                     r.file_type.value_or(r.dominant_type.value_or(dash)),
                     r.parameters ? human_count(*r.parameters, 1) : dash,
                     r.chat_template ? (*r.chat_template ? "yes" : "no") : dash, r.error});
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  std::string out;
  for (const auto& line : table) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(width[c] - line[c].size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

int run_list(const ListOptions& opts) {
  Result<std::string> dir = model_cache_dir();
  if (!dir.ok()) {
    std::fprintf(stderr, "geniex list: %s\n", dir.status().message().c_str());
    return kExitError;
  }
  const std::vector<ModelRow> rows = scan(*dir);
  const std::string text = opts.json ? render_json(*dir, rows) : render_text(*dir, rows);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "geniex list: error writing to stdout\n");
    return kExitError;
  }
  return kExitOk;
}

}  // namespace

Command register_list(CLI::App& parent) {
  auto opts = std::make_shared<ListOptions>();
  CLI::App* sub = parent.add_subcommand(
      "list", "List the models in the model cache (${XDG_CACHE_HOME:-~/.cache}/geniex/models)");
  sub->add_flag("--json", opts->json, "Print one JSON object: {dir, models: [...]}");
  return {sub, [opts] { return run_list(*opts); }};
}

}  // namespace geniex::cli
