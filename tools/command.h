// A registered subcommand: the CLI11 sub-app it owns and the action to run when the user
// selected it. Each cmd_<name>.cpp exposes `Command register_<name>(CLI::App& parent)`.
#pragma once

#include <functional>

namespace CLI {  // NOLINT(readability-identifier-naming): third-party name
class App;
}  // namespace CLI

namespace geniex::cli {

/// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  ///< the command ran and failed (bad file, I/O, ...)
inline constexpr int kExitUsage = 2;  ///< the command line itself was wrong

struct Command {
  CLI::App* app = nullptr;   ///< owned by the parent app
  std::function<int()> run;  ///< returns the process exit code
};

}  // namespace geniex::cli
