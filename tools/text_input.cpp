#include "text_input.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace geniex::cli {

Result<std::string> read_stdin() {
  std::string out;
  char buf[65536];
  for (;;) {
    const size_t n = std::fread(buf, 1, sizeof buf, stdin);
    out.append(buf, n);
    if (n < sizeof buf) {
      if (std::ferror(stdin) != 0) return io_error("cannot read standard input");
      break;
    }
  }
  return out;
}

Result<std::string> read_text_input(const std::string& text, const std::string& file) {
  if (!text.empty()) return text;
  if (file == "-") return read_stdin();
  if (!file.empty()) {
    std::ifstream f(file, std::ios::binary);
    if (!f) return io_error("cannot read " + file);
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) return io_error("cannot read " + file);
    return ss.str();
  }
  if (isatty(STDIN_FILENO) == 0) return read_stdin();
  return std::string();
}

}  // namespace geniex::cli
