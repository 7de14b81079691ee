#include "backends/opencl/program_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/fnv1a.h"

namespace geniex::backends::opencl {
namespace {

// File layout: magic, payload size, FNV-1a of the payload, payload (the driver's binary). The
// checksum lets a truncated or corrupted file be recognised before the driver sees it.
constexpr char kMagic[8] = {'G', 'X', 'C', 'L', 'B', 'I', 'N', '1'};
// The seed this cache has always used (files and keys stay valid).
constexpr uint64_t kSeed = 1469598103934665603ull;

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string build_log(const ClApi& api, cl_program prog, cl_device_id device) {
  size_t n = 0;
  if (api.clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS ||
      n == 0) {
    return {};
  }
  std::string log(n, '\0');
  if (api.clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr) !=
      CL_SUCCESS) {
    return {};
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The cached binary at `path`, or empty when absent or corrupt.
std::vector<unsigned char> read_cached(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::vector<unsigned char> all((std::istreambuf_iterator<char>(f)), {});
  constexpr size_t kHeader = sizeof(kMagic) + 16;
  if (all.size() < kHeader || std::memcmp(all.data(), kMagic, sizeof(kMagic)) != 0) return {};
  uint64_t size = 0, sum = 0;
  std::memcpy(&size, all.data() + 8, 8);
  std::memcpy(&sum, all.data() + 16, 8);
  if (size != all.size() - kHeader || size == 0 ||
      fnv1a(all.data() + kHeader, size, kSeed) != sum) {
    return {};
  }
  return {all.begin() + static_cast<std::ptrdiff_t>(kHeader), all.end()};
}

// Writes the binary to `path` through a temporary file and rename (readers never see a partial
// file). Failures only lose the cache.
bool write_cached(const std::string& path, const std::vector<unsigned char>& bin) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    const uint64_t size = bin.size(), sum = fnv1a(bin.data(), bin.size(), kSeed);
    f.write(kMagic, sizeof(kMagic));
    f.write(reinterpret_cast<const char*>(&size), 8);
    f.write(reinterpret_cast<const char*>(&sum), 8);
    f.write(reinterpret_cast<const char*>(bin.data()), static_cast<std::streamsize>(bin.size()));
    if (!f.good()) {
      f.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

std::vector<unsigned char> program_binary(const ClApi& api, cl_program prog) {
  size_t size = 0;
  if (api.clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) !=
          CL_SUCCESS ||
      size == 0) {
    return {};
  }
  std::vector<unsigned char> bin(size);
  unsigned char* ptr = bin.data();
  if (api.clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) {
    return {};
  }
  return bin;
}

}  // namespace

std::string resolve_cache_dir(const std::string& dir) {
  if (dir == "none") return {};
  if (!dir.empty()) return dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/geniex/opencl";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/geniex/opencl";
  }
  return {};
}

Result<ProgramBuild> build_program(const ClApi& api, cl_context ctx, cl_device_id device,
                                   const std::string& source, const std::string& options,
                                   const std::string& device_key, const std::string& cache_dir) {
  ProgramBuild out;
  std::string path;
  if (!cache_dir.empty()) {
    uint64_t h = fnv1a(source.data(), source.size(), kSeed);
    h = fnv1a(options.data(), options.size(), h);
    h = fnv1a(device_key.data(), device_key.size(), h);
    path = cache_dir + "/" + hex(h) + ".clbin";
    const std::vector<unsigned char> bin = read_cached(path);
    if (!bin.empty()) {
      const unsigned char* ptr = bin.data();
      const size_t size = bin.size();
      cl_int bin_status = CL_SUCCESS, err = CL_SUCCESS;
      auto prog = cl_own(
          &api, api.clCreateProgramWithBinary(ctx, 1, &device, &size, &ptr, &bin_status, &err));
      if (err == CL_SUCCESS && bin_status == CL_SUCCESS &&
          api.clBuildProgram(prog.get(), 1, &device, options.c_str(), nullptr, nullptr) ==
              CL_SUCCESS) {
        out.program = std::move(prog);
        out.from_cache = true;
        return out;
      }
      // Rejected (another driver build, damage the checksum missed): rebuild from source.
    }
  }
  const char* src = source.c_str();
  const size_t len = source.size();
  cl_int err = CL_SUCCESS;
  auto prog = cl_own(&api, api.clCreateProgramWithSource(ctx, 1, &src, &len, &err));
  if (err != CL_SUCCESS) return cl_status(err, "clCreateProgramWithSource");
  err = api.clBuildProgram(prog.get(), 1, &device, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    return internal_error("opencl: building the kernels failed (" + cl_error_name(err) +
                          "): " + build_log(api, prog.get(), device));
  }
  if (!path.empty()) {
    const std::vector<unsigned char> bin = program_binary(api, prog.get());
    out.cache_written = !bin.empty() && write_cached(path, bin);
  }
  out.program = std::move(prog);
  return out;
}

}  // namespace geniex::backends::opencl
