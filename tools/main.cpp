// geniex: command-line entry point. Parses the command line with CLI11 and dispatches to the
// selected subcommand; every subcommand registers itself via a register_<name>() function.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <vector>

#include "cmd_bench.h"
#include "cmd_inspect.h"
#include "cmd_list.h"
#include "cmd_perplexity.h"
#include "cmd_pull.h"
#include "cmd_run.h"
#include "cmd_serve.h"
#include "cmd_tokenize.h"
#include "command.h"

#ifndef GENIEX_VERSION_STRING
#define GENIEX_VERSION_STRING "unknown"
#endif

namespace geniex::cli {
namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"GenieX: LLM inference runtime", "geniex"};
  app.set_version_flag("--version", "geniex " GENIEX_VERSION_STRING);
  app.require_subcommand(1);

  // One line per subcommand; later: quantize, convert.
  const std::vector<Command> commands = {
      register_run(app),      register_chat(app),       register_inspect(app),
      register_tokenize(app), register_detokenize(app), register_bench(app),
      register_serve(app),    register_perplexity(app), register_list(app),
      register_pull(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0 through here; anything else is a usage error.
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  for (const Command& cmd : commands) {
    if (cmd.app->parsed()) return cmd.run();
  }
  std::fputs(app.help().c_str(), stderr);
  return kExitUsage;
}

}  // namespace
}  // namespace geniex::cli

int main(int argc, char** argv) {
  try {
    return geniex::cli::run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "geniex: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "geniex: internal error: unknown exception\n");
  }
  return geniex::cli::kExitError;
}
