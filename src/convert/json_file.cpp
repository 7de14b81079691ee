#include "convert/json_file.h"

#include "core/regular_file.h"

namespace geniex::convert {

Result<nlohmann::json> read_json_file(const std::string& path) {
  GENIEX_ASSIGN_OR_RETURN(RegularFile f, RegularFile::open(path));
  GENIEX_ASSIGN_OR_RETURN(std::string text, f.read_all(kMaxJsonFileBytes, "JSON file"));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return data_loss(path + ": not valid JSON");
  return j;
}

Result<std::optional<nlohmann::json>> read_json_file_if_exists(const std::string& path) {
  auto j = read_json_file(path);
  if (!j.ok()) {
    if (j.status().code() == StatusCode::kNotFound) return std::optional<nlohmann::json>{};
    return j.status();
  }
  return std::optional<nlohmann::json>(std::move(j).value());
}

}  // namespace geniex::convert
