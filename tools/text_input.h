// Where a command's text comes from: -p TEXT, -f FILE, `-f -` (stdin), or stdin when it is not
// a terminal and neither flag is given (`echo hi | geniex run`). Reads are bounded: a FIFO,
// device or directory given as FILE is refused, and neither a file nor stdin may exceed
// kMaxTextBytes (`geniex tokenize < /dev/zero` fails instead of eating memory).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace geniex::cli {

/// The most bytes of text a command reads (256 MiB): thousands of times any context and any
/// perplexity corpus in use (wikitext-2's test split is 1.3 MB), yet a bound on the memory that
/// text and its tokens take.
inline constexpr uint64_t kMaxTextBytes = uint64_t{256} << 20;

/// `text` if non-empty; else the file's bytes (`-` = standard input); else all of standard input
/// when it is not a TTY; else "". kInvalidArgument when the file is not a regular file,
/// kResourceExhausted beyond kMaxTextBytes, kNotFound / kIoError naming the file otherwise.
Result<std::string> read_text_input(const std::string& text, const std::string& file);

/// A text file's bytes, with read_text_input's checks.
Result<std::string> read_text_file(const std::string& path);

/// All of standard input (binary-safe), at most kMaxTextBytes.
Result<std::string> read_stdin();

}  // namespace geniex::cli
