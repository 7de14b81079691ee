// Fuzzes the server's request parsers (chat and completions bodies), the JSON-object prefix
// recognizer and response serialization with arbitrary bytes: they must never crash, throw or
// hang, whatever a client sends.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/json_prefix.h"
#include "server/request.h"
#include "server/response.h"

using geniex::server::CompletionRequest;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  auto chat = geniex::server::parse_chat_request(in);
  if (auto* r = std::get_if<CompletionRequest>(&chat)) {
    // Echo the parsed text through the serializers (invalid UTF-8 must not throw).
    std::string all;
    for (const auto& m : r->messages) all += m.content;
    const geniex::server::ResponseMeta meta{"id", 0, r->model};
    (void)geniex::server::dump(
        geniex::server::chat_completion_json(meta, all, "stop", {1, 1}, std::nullopt));
  }
  (void)geniex::server::parse_completion_request(in);
  // The recognizer byte by byte and in one piece agree.
  geniex::server::JsonPrefix whole, bytes;
  const bool ok = whole.feed(in);
  bool ok_bytes = true;
  for (const char c : in) {
    if (!bytes.feed(std::string_view(&c, 1))) {
      ok_bytes = false;
      break;
    }
  }
  if (ok != ok_bytes || (ok && whole.complete() != bytes.complete())) __builtin_trap();
  return 0;
}
