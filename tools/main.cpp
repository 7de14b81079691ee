// geniex: command-line entry point. Parses the command line with CLI11 and dispatches to the
// selected subcommand; every subcommand registers itself via a register_<name>() function.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cmd_bench.h"
#include "cmd_compile.h"
#include "cmd_convert.h"
#include "cmd_embed.h"
#include "cmd_health.h"
#include "cmd_imatrix.h"
#include "cmd_inspect.h"
#include "cmd_list.h"
#include "cmd_perplexity.h"
#include "cmd_pull.h"
#include "cmd_quantize.h"
#include "cmd_run.h"
#include "cmd_serve.h"
#include "cmd_tokenize.h"
#include "command.h"
#include "flag_compat.h"

#ifndef GENIEX_VERSION_STRING
#define GENIEX_VERSION_STRING "unknown"
#endif

namespace geniex::cli {
namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"GenieX: LLM inference runtime", "geniex"};
  app.set_version_flag("--version", "geniex " GENIEX_VERSION_STRING);
  app.require_subcommand(1);

  // One line per subcommand; later: quantize.
  const std::vector<Command> commands = {
      register_run(app),      register_chat(app),       register_inspect(app),
      register_tokenize(app), register_detokenize(app), register_bench(app),
      register_serve(app),    register_perplexity(app), register_list(app),
      register_pull(app),     register_compile(app),    register_convert(app),
      register_quantize(app), register_imatrix(app),    register_health(app),
      register_embed(app),
  };

  // llama.cpp's single-dash long flags become ours; CLI11 wants argv in reverse order.
  std::vector<std::string> args = rewrite_llama_flags(argc, argv);
  std::vector<std::string> names;
  for (const Command& cmd : commands) names.push_back(cmd.app->get_name());
  const Command* chosen = nullptr;
  if (args.size() > 1 && !args[1].starts_with("-")) {
    for (const Command& cmd : commands) {
      if (cmd.app->get_name() == args[1]) chosen = &cmd;
    }
    if (chosen == nullptr) {
      const std::string near = nearest(args[1], names);
      std::fprintf(stderr, "geniex: unknown command '%s'%s\nRun 'geniex --help' for the list.\n",
                   args[1].c_str(), near.empty() ? "" : (". Did you mean '" + near + "'?").c_str());
      return kExitUsage;
    }
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
  try {
    app.parse(reversed);
  } catch (const CLI::ExtrasError& e) {
    // An unknown flag: name the closest one the subcommand has.
    std::string hint;
    if (chosen != nullptr) {
      const std::vector<std::string> flags = flag_names(*chosen->app);
      for (size_t i = 2; i < args.size() && hint.empty(); ++i) {
        if (!args[i].starts_with("-")) continue;
        const std::string word = args[i].substr(0, args[i].find('='));
        if (chosen->app->get_option_no_throw(word) != nullptr) continue;
        const std::string near = nearest(word, flags);
        if (!near.empty()) hint = "Did you mean '" + near + "' (for '" + word + "')?";
      }
    }
    std::fprintf(stderr, "geniex%s%s: %s\n", chosen != nullptr ? " " : "",
                 chosen != nullptr ? chosen->app->get_name().c_str() : "", e.what());
    if (!hint.empty()) std::fprintf(stderr, "%s\n", hint.c_str());
    std::fprintf(stderr, "Run with --help for more information.\n");
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0 through here; anything else is a usage error.
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  for (const Command& cmd : commands) {
    if (!cmd.app->parsed()) continue;
    for (const std::string& note : ignored_flag_notes(*cmd.app)) {
      std::fprintf(stderr, "geniex: %s\n", note.c_str());
    }
    return cmd.run();
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
