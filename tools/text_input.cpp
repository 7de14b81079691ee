#include "text_input.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "core/regular_file.h"

namespace geniex::cli {

Result<std::string> read_stdin() {
  std::string out;
  char buf[65536];
  for (;;) {
    const size_t n = std::fread(buf, 1, sizeof buf, stdin);
    if (out.size() + n > kMaxTextBytes) {
      return resource_exhausted("standard input is more than " + std::to_string(kMaxTextBytes) +
                                " bytes; at most that much text is read");
    }
    out.append(buf, n);
    if (n < sizeof buf) {
      if (std::ferror(stdin) != 0) return io_error("cannot read standard input");
      break;
    }
  }
  return out;
}

Result<std::string> read_text_file(const std::string& path) {
  auto f = RegularFile::open(path);
  if (!f.ok()) {
    // /dev/stdin and <(command) are pipes: say how to read standard input instead.
    struct stat st {};
    const bool stream =
        ::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode));
    return Status(f.status().code(),
                  f.status().message() + (stream ? " (standard input: -f - or a pipe)" : ""));
  }
  return f->read_all(kMaxTextBytes, "text file");
}

Result<std::string> read_text_input(const std::string& text, const std::string& file) {
  if (!text.empty()) return text;
  if (file == "-") return read_stdin();
  if (!file.empty()) return read_text_file(file);
  if (isatty(STDIN_FILENO) == 0) return read_stdin();
  return std::string();
}

}  // namespace geniex::cli
