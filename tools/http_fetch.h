// HTTP(S) GETs for `geniex pull`, over libcurl (Debian's libcurl4-openssl-dev): a client with
// TLS, redirects and proxies built in (the server's Boost.Beast transport is server-side only).
// A build without libcurl keeps the functions, which then return UNIMPLEMENTED.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "core/status.h"

namespace geniex::cli {

/// Called as bytes arrive: bytes so far and the expected total (0 while unknown).
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

/// Whether this build can fetch (it was linked with libcurl).
bool http_available();

/// GETs a small document (an index page) with the given Accept header. Follows redirects;
/// HTTP errors (>= 400) and a set `cancel` are errors. Schemes: http, https, file.
Result<std::string> http_get_text(const std::string& url, const std::string& accept,
                                  const std::atomic<bool>& cancel);

/// GETs `url` into `out` and returns the lowercase hex SHA-256 of the bytes written. Setting
/// `cancel` (e.g. from a signal handler) stops the transfer with a CANCELLED-style error.
Result<std::string> http_download(const std::string& url, std::FILE* out,
                                  const ProgressFn& progress, const std::atomic<bool>& cancel);

}  // namespace geniex::cli
