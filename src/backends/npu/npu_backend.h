// The NPU backend: a backends::Backend over a loaded NPU plugin (plugin_loader.h). It answers
// supports() from the plugin's caps, compiles each graph structure once and executes it with the
// bindings' host buffers.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "backends/npu/plugin_loader.h"
#include "core/status.h"

namespace geniex::backends {

/// How NPU backends are found and configured.
struct NpuOptions {
  /// Folder to search for libgeniex_npu_*.so; empty: npu::default_plugin_dirs().
  std::filesystem::path plugin_dir;
  /// Passed to each plugin's create ("key=value;..."; plugin-defined keys), may be empty.
  std::string config;
  /// When set, receives one line per plugin that was skipped (and nothing is printed);
  /// when null, those lines go to stderr.
  std::vector<std::string>* notes = nullptr;
  /// Compiled graphs kept per backend (least recently used ones are released beyond it).
  size_t max_cached_graphs = 16;
};

/// A backend over an already loaded plugin (takes ownership).
Result<std::unique_ptr<Backend>> make_npu_backend(std::unique_ptr<npu::LoadedNpuPlugin> plugin,
                                                  const NpuOptions& options = {});

/// Loads the plugin file `path` with options.config and wraps it.
Result<std::unique_ptr<Backend>> make_npu_backend(const std::filesystem::path& path,
                                                  const NpuOptions& options = {});

/// One backend per plugin found in options.plugin_dir (or the default folders); bad plugins are
/// skipped with a note. No plugins is an empty vector; an explicit plugin_dir that is not a
/// folder is kNotFound.
Result<std::vector<std::unique_ptr<Backend>>> make_npu_backends(const NpuOptions& options = {});

}  // namespace geniex::backends
