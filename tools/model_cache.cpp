#include "model_cache.h"

#include <cstdlib>

namespace geniex::cli {

Result<std::string> model_cache_dir() {
  // Shell `${VAR:-default}`: unset and empty are the same.
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  std::string base = env("XDG_CACHE_HOME");
  if (base.empty()) {
    const std::string home = env("HOME");
    if (home.empty()) {
      return not_found("cannot find the model cache: neither $XDG_CACHE_HOME nor $HOME is set");
    }
    base = home + "/.cache";
  }
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/geniex/models";
}

}  // namespace geniex::cli
