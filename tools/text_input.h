// Where a command's text comes from: -p TEXT, -f FILE, `-f -` (stdin), or stdin when it is not
// a terminal and neither flag is given (`echo hi | geniex run`).
#pragma once

#include <string>

#include "core/status.h"

namespace geniex::cli {

/// `text` if non-empty; else the file's bytes (`-` = standard input); else all of standard input
/// when it is not a TTY; else "". IO_ERROR naming the file when it cannot be read.
Result<std::string> read_text_input(const std::string& text, const std::string& file);

/// All of standard input (binary-safe).
Result<std::string> read_stdin();

}  // namespace geniex::cli
