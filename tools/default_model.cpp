#include "default_model.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace geniex::cli {

Result<std::string> default_model_path() {
  std::string path;
  std::string origin;
  if (const char* env = std::getenv("GENIEX_MODEL"); env != nullptr && *env != '\0') {
    path = env;
    origin = "$GENIEX_MODEL";
  } else {
    const char* home = std::getenv("HOME");
    if (home == nullptr || *home == '\0') {
      return not_found(
          "no model given, $GENIEX_MODEL is not set and $HOME is unknown: pass a model file, "
          "set GENIEX_MODEL, or run scripts/setup.sh");
    }
    path = std::string(home) + "/.cache/geniex/models/" + kDefaultModelFile;
    origin = "the default model";
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return not_found("no model given and " + origin + " " + path +
                     " does not exist: run scripts/setup.sh to download it, set GENIEX_MODEL, "
                     "or pass a model file");
  }
  return path;
}

}  // namespace geniex::cli
