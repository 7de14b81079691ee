// `geniex compile -m MODEL [--device npu] [--target v75] [--soc N] [--plugin-dir DIR]
// [--cache-dir DIR]`: prepares the model's NPU graphs ahead of time. Loads the model on the NPU
// (the QNN HTP plugin), runs a prefill chunk and two decode steps so that their graphs are
// prepared for the target, and lists the context binaries the plugin wrote to its cache (the
// next load restores them instead of preparing again): our precompiled package for the NPU.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_compile(CLI::App& parent);

}  // namespace geniex::cli
