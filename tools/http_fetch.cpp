#include "http_fetch.h"

#ifdef GENIEX_HAVE_CURL
#include <curl/curl.h>
#include <openssl/evp.h>

#include <memory>
#include <mutex>
#endif

namespace geniex::cli {

#ifndef GENIEX_HAVE_CURL

bool http_available() { return false; }

Result<std::string> http_get_text(const std::string&, const std::string&,
                                  const std::atomic<bool>&) {
  return unimplemented("this geniex was built without libcurl: no downloads");
}

Result<std::string> http_download(const std::string&, std::FILE*, const ProgressFn&,
                                  const std::atomic<bool>&) {
  return unimplemented("this geniex was built without libcurl: no downloads");
}

#else

namespace {

#ifndef GENIEX_VERSION_STRING
#define GENIEX_VERSION_STRING "unknown"
#endif

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct EvpDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// What the callbacks see of one transfer.
struct Transfer {
  const std::atomic<bool>* cancel = nullptr;
  const ProgressFn* progress = nullptr;
  std::string* text = nullptr;  // small documents go here ...
  std::FILE* file = nullptr;    // ... downloads here, hashed on the way
  EVP_MD_CTX* sha = nullptr;
  bool write_failed = false;
  uint64_t done = 0;
};

size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (t->cancel->load()) return 0;  // a short write aborts the transfer
  if (t->text != nullptr) {
    if (t->text->size() + len > (size_t{64} << 20)) return 0;  // no index page is this big
    t->text->append(data, len);
  } else {
    if (std::fwrite(data, 1, len, t->file) != len) {
      t->write_failed = true;
      return 0;
    }
    EVP_DigestUpdate(t->sha, data, len);
  }
  t->done += len;
  return len;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->cancel->load()) return 1;  // CURLE_ABORTED_BY_CALLBACK
  if (t->progress != nullptr && *t->progress) {
    (*t->progress)(static_cast<uint64_t>(now), static_cast<uint64_t>(total));
  }
  return 0;
}

Status perform(const std::string& url, const std::string& accept, Transfer& t) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return internal_error("libcurl: curl_easy_init failed");
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  if (!accept.empty()) {
    headers.reset(curl_slist_append(nullptr, ("Accept: " + accept).c_str()));
  }
  char err[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "geniex/" GENIEX_VERSION_STRING);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // stalled for a minute: give up
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  const CURLcode rc = curl_easy_perform(c);
  if (t.cancel->load()) return {StatusCode::kInternal, "cancelled"};
  if (t.write_failed) return io_error("writing the download of " + url + " failed (disk full?)");
  if (rc != CURLE_OK) {
    long http = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
    std::string why = err[0] != '\0' ? err : curl_easy_strerror(rc);
    if (rc == CURLE_HTTP_RETURNED_ERROR && http == 404) {
      return not_found("GET " + url + ": " + why);
    }
    return io_error("GET " + url + ": " + why);
  }
  return Status::ok_status();
}

}  // namespace

bool http_available() { return true; }

Result<std::string> http_get_text(const std::string& url, const std::string& accept,
                                  const std::atomic<bool>& cancel) {
  std::string body;
  Transfer t;
  t.cancel = &cancel;
  t.text = &body;
  GENIEX_TRY(perform(url, accept, t));
  return body;
}

Result<std::string> http_download(const std::string& url, std::FILE* out,
                                  const ProgressFn& progress, const std::atomic<bool>& cancel) {
  std::unique_ptr<EVP_MD_CTX, EvpDeleter> sha(EVP_MD_CTX_new());
  if (!sha || EVP_DigestInit_ex(sha.get(), EVP_sha256(), nullptr) != 1) {
    return internal_error("OpenSSL: cannot start a SHA-256");
  }
  Transfer t;
  t.cancel = &cancel;
  t.progress = &progress;
  t.file = out;
  t.sha = sha.get();
  GENIEX_TRY(perform(url, "", t));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(sha.get(), digest, &len) != 1) {
    return internal_error("OpenSSL: cannot finish a SHA-256");
  }
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

#endif

}  // namespace geniex::cli
