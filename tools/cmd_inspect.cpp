#include "cmd_inspect.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "default_model.h"
#include "gguf/gguf_reader.h"
#include "human_units.h"

namespace geniex::cli {
namespace {

using Json = nlohmann::ordered_json;
using gguf::GgufFile;
using gguf::TensorInfo;
using gguf::Value;
using gguf::ValueType;

constexpr size_t kTextMaxArray = 8;

struct InspectOptions {
  std::string path;
  bool json = false;
  std::optional<size_t> max_array;  // unset: 8 in text mode, everything in JSON
};

// ---- JSON ----------------------------------------------------------------------------------

template <typename T>
Json json_array(const std::vector<T>& v, size_t limit) {
  Json out = Json::array();
  const size_t n = v.size() < limit ? v.size() : limit;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<T>(v[i]));
  return out;
}

Json json_value(const Value& value, size_t limit) {
  return std::visit(
      [&](const auto& s) -> Json {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, uint64_t> || std::is_same_v<S, int64_t> ||
                      std::is_same_v<S, double> || std::is_same_v<S, bool> ||
                      std::is_same_v<S, std::string>) {
          return Json(s);  // FLOAT32 is stored as float widened to double: exact
        } else {
          return json_array(s, limit);
        }
      },
      value.storage());
}

Json tensor_ne(const TensorInfo& t) {
  Json ne = Json::array();
  for (uint32_t d = 0; d < t.n_dims && d < gguf::kMaxDims; ++d) ne.push_back(t.ne[d]);
  return ne;
}

std::string render_json(const GgufFile& file, const std::string& path, size_t limit) {
  Json root;
  root["path"] = path;
  root["version"] = file.version();
  root["file_size"] = file.file_size();
  root["alignment"] = file.alignment();
  root["data_offset"] = file.data_offset();
  Json metadata = Json::array();
  for (const gguf::KeyValue& kv : file.metadata()) {
    Json entry;
    entry["key"] = kv.key;
    entry["type"] = std::string(gguf::value_type_name(kv.value.type()));
    if (kv.value.is_array()) {
      entry["elem_type"] = std::string(gguf::value_type_name(kv.value.elem_type()));
      entry["count"] = kv.value.array_size();
    }
    entry["value"] = json_value(kv.value, limit);
    metadata.push_back(std::move(entry));
  }
  root["metadata"] = std::move(metadata);
  Json tensors = Json::array();
  for (const TensorInfo& t : file.tensors()) {
    Json entry;
    entry["name"] = t.name;
    entry["type"] = std::string(ggml_type_name(t.type));
    entry["ne"] = tensor_ne(t);
    entry["n_elements"] = t.n_elements();
    entry["n_bytes"] = t.n_bytes;
    entry["offset"] = t.offset;
    tensors.push_back(std::move(entry));
  }
  root["tensors"] = std::move(tensors);
  // Strings are not guaranteed to be UTF-8: replace bad bytes with U+FFFD instead of throwing.
  return root.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

// ---- text ----------------------------------------------------------------------------------

void appendf(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& out, const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof buf) {
    out.append(buf, static_cast<size_t>(n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(args, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, args);
  va_end(args);
  out.append(big.data(), static_cast<size_t>(n));
}

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

// Text output stays valid UTF-8: bytes that are not are shown as \xNN.
std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      appendf(out, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[i])));
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string type_label(const Value& v) {
  if (!v.is_array()) return std::string(gguf::value_type_name(v.type()));
  return "[" + std::string(gguf::value_type_name(v.elem_type())) + "]";
}

std::string shape_label(const TensorInfo& t) {
  std::string out = "[";
  for (uint32_t d = 0; d < t.n_dims && d < gguf::kMaxDims; ++d) {
    if (d) out += ", ";
    out += std::to_string(t.ne[d]);
  }
  return out + "]";
}

void render_header(std::string& out, const GgufFile& file, const std::string& path) {
  appendf(out, "GGUF file: %s\n", printable(path).c_str());
  appendf(out, "  version:      %u\n", file.version());
  appendf(out, "  file size:    %" PRIu64 " bytes (%s)\n", file.file_size(),
          human_bytes(file.file_size(), 2).c_str());
  appendf(out, "  alignment:    %u\n", file.alignment());
  appendf(out, "  data offset:  %" PRIu64 "\n", file.data_offset());
  appendf(out, "  tensors:      %zu\n", file.tensors().size());
  appendf(out, "  metadata:     %zu key/value pairs\n", file.metadata().size());
}

void render_metadata(std::string& out, const GgufFile& file, size_t limit) {
  appendf(out, "\nMetadata (%zu):\n", file.metadata().size());
  appendf(out, "  %5s  %-10s %8s  %s\n", "#", "type", "count", "key = value");
  size_t i = 0;
  for (const gguf::KeyValue& kv : file.metadata()) {
    appendf(out, "  %5zu: %-10s %8zu  %s = %s\n", ++i, type_label(kv.value).c_str(),
            kv.value.array_size(), printable(kv.key).c_str(),
            printable(kv.value.to_display(limit)).c_str());
  }
}

void render_tensors(std::string& out, const GgufFile& file) {
  const auto& tensors = file.tensors();
  int name_w = 4;
  int shape_w = 5;
  for (const TensorInfo& t : tensors) {
    name_w = std::max(name_w, static_cast<int>(t.name.size()));
    shape_w = std::max(shape_w, static_cast<int>(shape_label(t).size()));
  }
  appendf(out, "\nTensors (%zu):\n", tensors.size());
  appendf(out, "  %5s  %-*s  %-7s  %-*s  %12s  %12s  %12s\n", "#", name_w, "name", "type", shape_w,
          "shape", "elements", "bytes", "offset");
  size_t i = 0;
  for (const TensorInfo& t : tensors) {
    appendf(out, "  %5zu: %-*s  %-7s  %-*s  %12" PRIu64 "  %12" PRIu64 "  %12" PRIu64 "\n", ++i,
            name_w, printable(t.name).c_str(), std::string(ggml_type_name(t.type)).c_str(), shape_w,
            shape_label(t).c_str(), t.n_elements(), t.n_bytes, t.offset);
  }
}

void render_summary(std::string& out, const GgufFile& file) {
  struct PerType {
    size_t count = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, PerType> per_type;
  uint64_t params = 0;
  uint64_t bytes = 0;
  for (const TensorInfo& t : file.tensors()) {
    params += t.n_elements();
    bytes += t.n_bytes;
    PerType& p = per_type[std::string(ggml_type_name(t.type))];
    ++p.count;
    p.bytes += t.n_bytes;
  }
  appendf(out, "\nSummary:\n");
  appendf(out, "  parameters:   %" PRIu64 " (%s)\n", params, human_count(params, 2).c_str());
  appendf(out, "  tensor bytes: %" PRIu64 " (%s)\n", bytes, human_bytes(bytes, 2).c_str());
  for (const auto& [name, p] : per_type) {
    appendf(out, "  %-7s %5zu tensors  %s\n", name.c_str(), p.count,
            human_bytes(p.bytes, 2).c_str());
  }
}

std::string render_text(const GgufFile& file, const std::string& path, size_t limit) {
  std::string out;
  render_header(out, file, path);
  render_metadata(out, file, limit);
  render_tensors(out, file);
  render_summary(out, file);
  return out;
}

// ---- command -------------------------------------------------------------------------------

int write_stdout(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "geniex inspect: error writing to stdout\n");
    return kExitError;
  }
  return kExitOk;
}

int run_inspect(const InspectOptions& opts) {
  std::string path = opts.path;
  if (path.empty()) {
    Result<std::string> def = default_model_path();
    if (!def.ok()) {
      std::fprintf(stderr, "geniex inspect: %s\n", def.status().message().c_str());
      return kExitError;
    }
    path = std::move(def).value();
  }
  Result<GgufFile> file = GgufFile::open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "geniex inspect: cannot read %s: %s\n", path.c_str(),
                 file.status().to_string().c_str());
    return kExitError;
  }
  if (opts.json) {
    return write_stdout(render_json(*file, path, opts.max_array.value_or(SIZE_MAX)));
  }
  return write_stdout(render_text(*file, path, opts.max_array.value_or(kTextMaxArray)));
}

}  // namespace

Command register_inspect(CLI::App& parent) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* sub = parent.add_subcommand(
      "inspect", "Show a GGUF file's header, metadata and tensors (default: the default model)");
  auto* pos = sub->add_option("file", opts->path,
                              "GGUF file (default: $GENIEX_MODEL or the default model)");
  auto* flag = sub->add_option("-m,--model", opts->path, "GGUF file (the same as FILE)");
  pos->excludes(flag);
  flag->excludes(pos);
  sub->add_flag("--json", opts->json, "Print one JSON object (arrays in full)");
  sub->add_option("--max-array", opts->max_array,
                  "Show at most N items of each array (text default: 8; JSON default: all)")
      ->check(CLI::NonNegativeNumber);
  return {sub, [opts] { return run_inspect(*opts); }};
}

}  // namespace geniex::cli
