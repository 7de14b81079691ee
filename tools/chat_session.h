// `geniex chat` (and `geniex run -cnv`): an interactive multi-turn chat on the model's template.
// Turns that no longer fit the context are dropped, oldest first, with a note; /system, /reset,
// /image, /exit; a line ending in `\` or a """ block is one multi-line turn.
#pragma once

#include <optional>
#include <string>

#include "command.h"
#include "model_flags.h"
#include "sampling_flags.h"

namespace geniex::cli {

struct ChatSessionOptions {
  ModelOptions m;
  SamplingOptions s;
  std::string system;
  bool verbose_prompt = false;
};

/// Loads the prepared model and chats on stdin/stdout until /exit or end of input; `first` (if
/// not empty) is the first user turn. Returns the exit code.
int run_chat_session(PreparedModel& prepared, const ChatSessionOptions& o,
                     const std::string& first);

Command register_chat_command(CLI::App& parent);

/// Reads one turn from `in`: a line; a line ending in `\` continues on the next; a line
/// starting with `"""` runs until a line ending in `"""`. nullopt at end of input.
/// `more` is called before each continuation line (to print a prompt).
std::optional<std::string> read_turn(std::istream& in, const std::function<void()>& more = {});

}  // namespace geniex::cli
