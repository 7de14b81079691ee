// Finding a wheel in a Python package index's "simple" API: the JSON form (PEP 691, what
// pypi.org answers when asked) or the HTML form (PEP 503, what every mirror serves).
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "core/status.h"

namespace geniex::cli {

/// Where a wheel lives and the sha256 the index states for it.
struct WheelLink {
  std::string url;     ///< absolute
  std::string sha256;  ///< lowercase hex
};

/// PEP 503 name normalisation: lowercase, runs of '-', '_', '.' become one '-'.
std::string normalize_project_name(std::string_view name);

/// Resolves `ref` (absolute, scheme-relative, root-relative or relative) against `base`.
std::string join_url(const std::string& base, const std::string& ref);

/// Finds `filename` in a project page of the simple API (JSON or HTML; `page_url` resolves
/// relative links). NOT_FOUND when it is not listed or has no sha256; DATA_LOSS when the page
/// is neither form.
Result<WheelLink> find_in_project_page(const std::string& page, const std::string& page_url,
                                       std::string_view filename);

/// Fetches `<index>/<normalized project>/` and finds `filename` in it.
Result<WheelLink> find_wheel(const std::string& index_url, std::string_view project,
                             std::string_view filename, const std::atomic<bool>& cancel);

}  // namespace geniex::cli
