// Where tests find the project's real model and source tree (one place for every suite).
#pragma once

#include <cstdlib>
#include <string>

namespace geniex::testing_paths {

/// The real Gemma 3 270M Q4_K_M: $GENIEX_MODEL, else the default location scripts/setup.sh
/// fills. Tests open it and fail (not skip) when it is missing.
inline std::string real_model_path() {
  if (const char* m = std::getenv("GENIEX_MODEL")) return m;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/geniex/models/gemma-3-270m-q4_k_m.gguf";
}

}  // namespace geniex::testing_paths
