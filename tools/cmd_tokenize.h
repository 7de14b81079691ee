// `geniex tokenize -m FILE [--add-special] [--parse-special] [--json] (TEXT | -f FILE)`: prints
// the token ids of a text (space-separated, or JSON with ids and pieces).
// `geniex detokenize -m FILE [--render-special] [--remove-special] ID...`: prints the text.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_tokenize(CLI::App& parent);
Command register_detokenize(CLI::App& parent);

}  // namespace geniex::cli
