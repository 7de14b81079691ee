#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace geniex {

std::string_view file_type_name(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "not a regular file";
  }
}

RegularFile::RegularFile(int fd, uint64_t size, std::string path)
    : fd_(fd), size_(size), path_(std::move(path)) {}

Result<RegularFile> RegularFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and is then refused by
  // its type below; it changes nothing for regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    std::string msg = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? not_found(msg) : io_error(msg);
  }
  RegularFile f(fd, 0, path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    return invalid_argument(path + " is " + std::string(file_type_name(st.st_mode)) +
                            ", not a regular file");
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  return f;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::string> RegularFile::read_all(uint64_t max_bytes, std::string_view what) const {
  auto too_large = [&](uint64_t size) {
    return resource_exhausted(std::string(what) + " " + path_ + " is " +
                              (size > size_ ? "more than " : "") + std::to_string(size) +
                              " bytes; at most " + std::to_string(max_bytes) + " are read");
  };
  if (size_ > max_bytes) return too_large(size_);
  // Read to the end rather than trusting size(): /proc files say 0, and a file may grow. The
  // limit still holds: reading stops one byte past it.
  std::string out;
  out.resize(static_cast<size_t>(size_ > 0 ? size_ : 4096));
  size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      if (got > max_bytes) return too_large(got);
      const uint64_t limit = max_bytes < UINT64_MAX ? max_bytes + 1 : max_bytes;
      out.resize(static_cast<size_t>(std::min<uint64_t>(limit, got * 2 + 4096)));
    }
    const ssize_t n = ::pread(fd_, out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(path_ + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) return too_large(got);
  out.resize(got);
  return out;
}

}  // namespace geniex
