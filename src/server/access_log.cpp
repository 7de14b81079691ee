#include "server/access_log.h"

#include <cstdio>

namespace geniex::server {
namespace {

constexpr size_t kMaxPath = 256;

void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < s.size() && i < kMaxPath; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '%' || c == '\\') {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxPath) out += "...";
}

std::string count(int64_t n) { return n < 0 ? "-" : std::to_string(n); }

}  // namespace

std::string access_log_line(const AccessRecord& r) {
  std::string out = "geniex serve: access: ";
  append_escaped(out, r.method.empty() ? std::string_view("-") : r.method);
  out += ' ';
  append_escaped(out, r.path.empty() ? std::string_view("-") : r.path);
  out += ' ' + std::to_string(r.status);
  out += " in=" + count(r.prompt_tokens) + " out=" + count(r.completion_tokens) + " ms=";
  if (r.ms < 0) {
    out += '-';
  } else {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", r.ms);
    out += buf;
  }
  if (r.client_closed) out += " client-closed";
  return out;
}

RequestNote& this_request() {
  thread_local RequestNote note;
  return note;
}

}  // namespace geniex::server
