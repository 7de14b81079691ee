#include "default_model.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "model_cache.h"

namespace geniex::cli {
namespace {

// $GENIEX_MODEL, else `file` in the model cache; `pull_name` is what `geniex pull` calls it.
Result<std::string> find_default(const char* file, const char* what, const char* pull_name) {
  std::string path;
  std::string origin;
  if (const char* env = std::getenv("GENIEX_MODEL"); env != nullptr && *env != '\0') {
    path = env;
    origin = "$GENIEX_MODEL";
  } else {
    Result<std::string> dir = model_cache_dir();
    if (!dir.ok()) {
      return not_found("no model given, $GENIEX_MODEL is not set and " + dir.status().message() +
                       ": pass a model file or set GENIEX_MODEL");
    }
    path = *dir + "/" + file;
    origin = std::string("the default ") + what;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return not_found("no model given and " + origin + " " + path +
                     " does not exist: run 'geniex pull " + pull_name +
                     "' (or scripts/setup.sh) to download it, set GENIEX_MODEL, or pass a "
                     "model file");
  }
  return path;
}

}  // namespace

Result<std::string> default_model_path() {
  return find_default(kDefaultModelFile, "model", "gemma3-270m");
}

Result<std::string> default_chat_model_path() {
  return find_default(kDefaultChatModelFile, "chat model", "smollm2");
}

}  // namespace geniex::cli
