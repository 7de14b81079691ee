// `geniex run` (one prompt, streamed) and `geniex chat` (interactive multi-turn REPL).
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_run(CLI::App& parent);
Command register_chat(CLI::App& parent);

}  // namespace geniex::cli
