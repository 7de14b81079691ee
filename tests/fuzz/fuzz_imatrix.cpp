// Fuzzes the importance-matrix reader of `geniex quantize --imatrix` (llama-imatrix's GGUF
// format and the legacy .dat format): any byte string must be accepted or refused with a
// Status, and what is accepted must hold only finite values in non-empty entries.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "quantize/imatrix_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader takes a path: hand it an in-memory file.
  const int fd = memfd_create("imatrix", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto m = geniex::quantize::load_imatrix(path);
  close(fd);
  if (!m.ok()) return 0;
  for (const auto& [name, values] : m->entries) {
    if (values.empty()) std::abort();
    for (float v : values) {
      if (!std::isfinite(v)) std::abort();
    }
  }
  return 0;
}
