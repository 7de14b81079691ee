#include "models/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace geniex::models {
namespace {

// The value text after 'key': in the header dict (trimmed at the next top-level ',' or '}'),
// or empty when the key is absent.
std::string dict_value(const std::string& header, const std::string& key) {
  const std::string needle = "'" + key + "':";
  const size_t at = header.find(needle);
  if (at == std::string::npos) return {};
  size_t i = at + needle.size();
  while (i < header.size() && header[i] == ' ') ++i;
  int depth = 0;
  size_t j = i;
  for (; j < header.size(); ++j) {
    const char c = header[j];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    if (depth < 0) break;
  }
  if (j < header.size() && header[j] == ')') ++j;
  return header.substr(i, j - i);
}

}  // namespace

Result<NpyArray> parse_npy(std::span<const uint8_t> bytes, const std::string& name) {
  static constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return data_loss(name + ": not a .npy file (bad magic)");
  }
  const uint8_t major = bytes[6];
  size_t header_len = 0;
  size_t header_at = 0;
  if (major == 1) {
    header_len = bytes[8] | (static_cast<size_t>(bytes[9]) << 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return data_loss(name + ": truncated header");
    header_len = bytes[8] | (static_cast<size_t>(bytes[9]) << 8) |
                 (static_cast<size_t>(bytes[10]) << 16) | (static_cast<size_t>(bytes[11]) << 24);
    header_at = 12;
  } else {
    return invalid_argument(name + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_at + header_len > bytes.size()) return data_loss(name + ": truncated header");
  const std::string header(reinterpret_cast<const char*>(bytes.data() + header_at), header_len);

  const std::string descr = dict_value(header, "descr");
  if (descr != "'<f4'") return invalid_argument(name + ": dtype " + descr + " is not '<f4'");
  if (dict_value(header, "fortran_order") != "False") {
    return invalid_argument(name + ": fortran_order arrays are not supported");
  }
  const std::string shape_text = dict_value(header, "shape");
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')') {
    return invalid_argument(name + ": bad shape " + shape_text);
  }
  NpyArray out;
  uint64_t count = 1;
  std::string num;
  for (size_t i = 1; i < shape_text.size(); ++i) {
    const char c = shape_text[i];
    if (c >= '0' && c <= '9') {
      num += c;
    } else if (c == ',' || c == ')') {
      if (!num.empty()) {
        if (num.size() > 12) return invalid_argument(name + ": shape dimension too large");
        const int64_t d = std::stoll(num);
        out.shape.push_back(d);
        count *= static_cast<uint64_t>(d);
        num.clear();
      }
    } else if (c != ' ') {
      return invalid_argument(name + ": bad shape " + shape_text);
    }
  }
  const size_t data_at = header_at + header_len;
  const uint64_t want = count * sizeof(float);
  if (bytes.size() - data_at != want) {
    return data_loss(name + ": expected " + std::to_string(want) + " data bytes, found " +
                     std::to_string(bytes.size() - data_at));
  }
  out.data.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* p = bytes.data() + data_at + i * 4;
    const uint32_t u = p[0] | (static_cast<uint32_t>(p[1]) << 8) |
                       (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
    std::memcpy(&out.data[i], &u, sizeof(float));
  }
  return out;
}

Result<NpyArray> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
}

}  // namespace geniex::models
