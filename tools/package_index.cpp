#include "package_index.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "http_fetch.h"

namespace geniex::cli {
namespace {

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The file name a link points at: its last path segment, without query or fragment.
std::string link_filename(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  return path.substr(path.rfind('/') + 1);
}

std::string html_unescape(std::string s) {
  static const std::pair<std::string_view, std::string_view> kEntities[] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}};
  for (const auto& [from, to] : kEntities) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
      s.replace(at, from.size(), to);
    }
  }
  return s;
}

Result<WheelLink> from_json(const nlohmann::json& doc, const std::string& page_url,
                            std::string_view filename) {
  if (!doc.is_object() || !doc.contains("files") || !doc["files"].is_array()) {
    return data_loss("index page " + page_url + " is JSON without a \"files\" list");
  }
  for (const auto& f : doc["files"]) {
    if (!f.is_object() || f.value("filename", "") != filename) continue;
    WheelLink link;
    link.url = join_url(page_url, f.value("url", ""));
    if (f.contains("hashes") && f["hashes"].is_object()) {
      link.sha256 = lower(f["hashes"].value("sha256", ""));
    }
    if (!is_hex64(link.sha256)) {
      return not_found("index page " + page_url + " lists " + std::string(filename) +
                       " without a sha256");
    }
    return link;
  }
  return not_found("index page " + page_url + " does not list " + std::string(filename));
}

Result<WheelLink> from_html(const std::string& page, const std::string& page_url,
                            std::string_view filename) {
  for (size_t at = page.find("href=\""); at != std::string::npos;
       at = page.find("href=\"", at + 1)) {
    const size_t start = at + 6;
    const size_t end = page.find('"', start);
    if (end == std::string::npos) break;
    const std::string href = html_unescape(page.substr(start, end - start));
    if (link_filename(href) != filename) continue;
    WheelLink link;
    const size_t hash = href.find("#sha256=");
    link.url = join_url(page_url, href.substr(0, href.find('#')));
    if (hash != std::string::npos) link.sha256 = lower(href.substr(hash + 8, 64));
    if (!is_hex64(link.sha256)) {
      return not_found("index page " + page_url + " lists " + std::string(filename) +
                       " without a #sha256= fragment");
    }
    return link;
  }
  return not_found("index page " + page_url + " does not list " + std::string(filename));
}

}  // namespace

std::string normalize_project_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::string join_url(const std::string& base, const std::string& ref) {
  if (ref.find("://") != std::string::npos) return ref;
  const size_t scheme_end = base.find("://");
  if (scheme_end == std::string::npos) return ref;
  if (ref.starts_with("//")) return base.substr(0, scheme_end + 1) + ref;
  if (ref.starts_with("/")) {
    const size_t host_end = base.find('/', scheme_end + 3);
    return base.substr(0, host_end) + ref;
  }
  // Relative: replace the last path segment ("../" is left to libcurl, which normalises it).
  const size_t cut = base.find_first_of("?#");
  const std::string path = base.substr(0, cut);
  return path.substr(0, path.rfind('/') + 1) + ref;
}

Result<WheelLink> find_in_project_page(const std::string& page, const std::string& page_url,
                                       std::string_view filename) {
  const size_t first = page.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && page[first] == '{') {
    nlohmann::json doc = nlohmann::json::parse(page, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return data_loss("index page " + page_url + " is not valid JSON");
    return from_json(doc, page_url, filename);
  }
  if (page.find("<a") == std::string::npos && page.find("<A") == std::string::npos) {
    return data_loss("index page " + page_url + " is neither PEP 691 JSON nor PEP 503 HTML");
  }
  return from_html(page, page_url, filename);
}

Result<WheelLink> find_wheel(const std::string& index_url, std::string_view project,
                             std::string_view filename, const std::atomic<bool>& cancel) {
  std::string base = index_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string page_url = base + "/" + normalize_project_name(project) + "/";
  GENIEX_ASSIGN_OR_RETURN(
      std::string page,
      http_get_text(page_url, "application/vnd.pypi.simple.v1+json, text/html;q=0.1", cancel));
  return find_in_project_page(page, page_url, filename);
}

}  // namespace geniex::cli
