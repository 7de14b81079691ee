// Qualcomm's QNN runtime as the QNN HTP plugin uses it: the backend libraries loaded from a folder
// (libQnnSystem.so, libQnnHtp.so), the interface provider checked against the core API version we
// were written for, and one open HTP device (log, backend, device) configured for a target SoC and
// Hexagon architecture. Errors carry QNN's error code and the last error QNN logged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "backends/npu/qnn/qnn_api.h"
#include "core/status.h"

namespace geniex::npu_qnn {

/// The libraries of one runtime folder, loaded once per process and never unloaded (QNN refuses
/// to load a backend library twice into one process, and its libc++ statics outlive dlclose).
struct Runtime {
  std::filesystem::path dir;
  const api::Interface* provider = nullptr;  ///< the HTP provider (e.g. "HTP_QTI_AISW")
  std::string build_id;                      ///< backendGetBuildId, "" when not answered
};

/// Loads (or returns the already loaded) runtime in `dir`. kNotFound "QNN runtime not found at
/// <dir> ..." when libQnnHtp.so / libQnnSystem.so are not there; kUnimplemented when they do
/// not load, export no provider, or report a core API major version other than ours (the message
/// names both versions).
Result<const Runtime*> load_runtime(const std::filesystem::path& dir);

/// Where the runtime is looked for: `configured` when not empty, else $GENIEX_QNN_LIB_DIR, else
/// GENIEX_QNN_DEFAULT_LIB_DIR (the project venv's onnxruntime_qnn folder, fixed at configure).
std::filesystem::path runtime_dir(const std::string& configured);

/// "2.40.0".
std::string version_text(const api::Version& v);

/// A failed QNN call as a Status: `what` (the call), QNN's error code, and the last error QNN
/// logged since the previous call of this function (QNN's own words).
Status qnn_error(const std::string& what, api::ErrorHandle e);

/// Forgets what QNN logged so far (QNN logs some errors that are not failures, e.g. at graph
/// creation): called before a sequence of calls whose failure qnn_error reports.
void clear_logged_error();

/// An open HTP device: log, backend and device handles, freed in reverse order.
class HtpDevice {
 public:
  /// Creates log (level `log_level`), backend and device with the HTP custom device configs
  /// SoC model `soc_model` and architecture `arch` (e.g. 73).
  static Result<std::unique_ptr<HtpDevice>> open(const Runtime& rt, uint32_t soc_model,
                                                 uint32_t arch, uint32_t log_level);
  ~HtpDevice();
  HtpDevice(const HtpDevice&) = delete;
  HtpDevice& operator=(const HtpDevice&) = delete;

  [[nodiscard]] const api::InterfaceTable& fn() const { return rt_->provider->fn; }
  [[nodiscard]] api::Handle backend() const { return backend_; }
  [[nodiscard]] api::Handle device() const { return device_; }

 private:
  HtpDevice() = default;
  const Runtime* rt_ = nullptr;
  api::Handle log_ = nullptr;
  api::Handle backend_ = nullptr;
  api::Handle device_ = nullptr;
};

}  // namespace geniex::npu_qnn
