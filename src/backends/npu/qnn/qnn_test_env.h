// For the QNN plugin's tests (backend, conformance, engine): where the QNN runtime is and whether
// scripts/setup.sh installed it. The QNN tests skip ONLY when the runtime folder lacks
// libQnnHtp.so AND setup did not install it (no .venv/.geniex-qnn-libdir); where setup installed
// it they run, and fail with a clear message if it cannot be loaded.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace geniex::npu_qnn::testing {

/// Built with GENIEX_QNN_DEFAULT_LIB_DIR / GENIEX_QNN_SETUP_MARKER defined by CMake.
struct QnnTestEnv {
  std::filesystem::path dir;        ///< the folder the plugin loads by default (env, else build's)
  bool present = false;             ///< dir/libQnnHtp.so exists
  bool installed_by_setup = false;  ///< scripts/setup.sh wrote its marker
  std::string marker_dir;           ///< the folder the marker names

  /// Empty when the QNN tests must run; else why they are skipped.
  [[nodiscard]] std::string skip_reason() const {
    if (present || installed_by_setup) return {};
    return "QNN runtime not found at " + dir.string() +
           " and scripts/setup.sh did not install it (no " GENIEX_QNN_SETUP_MARKER ")";
  }
  /// Context for a failure where the tests had to run.
  [[nodiscard]] std::string context() const {
    return "QNN runtime folder " + dir.string() + (present ? "" : " (no libQnnHtp.so)") +
           (installed_by_setup ? "; scripts/setup.sh installed it at " + marker_dir : "");
  }
};

inline QnnTestEnv qnn_test_env() {
  QnnTestEnv e;
  const char* env = std::getenv("GENIEX_QNN_LIB_DIR");
  e.dir = env != nullptr && *env != '\0' ? env : GENIEX_QNN_DEFAULT_LIB_DIR;
  std::error_code ec;
  e.present = std::filesystem::is_regular_file(e.dir / "libQnnHtp.so", ec);
  std::ifstream marker(GENIEX_QNN_SETUP_MARKER);
  e.installed_by_setup = static_cast<bool>(marker);
  if (marker) std::getline(marker, e.marker_dir);
  return e;
}

}  // namespace geniex::npu_qnn::testing
