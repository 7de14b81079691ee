// Reading the JSON files of a checkpoint directory (config.json, tokenizer.json, ...) without
// exceptions: a missing file, a non-regular file, a file over the size cap and invalid JSON are
// each a Status naming the path.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"

namespace geniex::convert {

/// Largest JSON file read (tokenizer.json of a 256K vocabulary is ~20 MB).
inline constexpr uint64_t kMaxJsonFileBytes = 512u << 20;

/// Parses `path`; kNotFound when it does not exist.
Result<nlohmann::json> read_json_file(const std::string& path);
/// As read_json_file, but a missing file is std::nullopt rather than an error.
Result<std::optional<nlohmann::json>> read_json_file_if_exists(const std::string& path);

}  // namespace geniex::convert
