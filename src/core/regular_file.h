// Opening files that came from the user: only regular files, and never a blocking open.
// Opening a FIFO for reading waits for a writer (a hang), and a device such as /dev/zero never
// ends; both are refused before anything is read, with an error that says what the path is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace geniex {

/// A regular file open for reading; the descriptor closes with the object. Movable.
class RegularFile {
 public:
  /// Opens `path` if it is a regular file (symbolic links followed). kNotFound when it does
  /// not exist, kInvalidArgument naming what it is otherwise ("is a directory", "is a FIFO
  /// (named pipe)", ...), kIoError for other failures. Never blocks.
  static Result<RegularFile> open(const std::string& path);

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  [[nodiscard]] int fd() const { return fd_; }
  /// The size when the file was opened.
  [[nodiscard]] uint64_t size() const { return size_; }
  [[nodiscard]] const std::string& path() const { return path_; }

  /// The file's bytes (as many as size() said). kResourceExhausted, before reading, when the
  /// file is larger than `max_bytes`; the message names the path, the size and the limit, and
  /// calls the file `what` ("text file", "KV state file").
  Result<std::string> read_all(uint64_t max_bytes, std::string_view what) const;

 private:
  RegularFile(int fd, uint64_t size, std::string path);

  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

/// What a file of this st_mode is, for error messages: "a directory", "a FIFO (named pipe)",
/// "a character device", ...
std::string_view file_type_name(unsigned mode);

}  // namespace geniex
