#include "prompt_view.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace geniex::cli {
namespace {

// Prompts shorter than this prefill in well under a second on a laptop: no progress line.
constexpr int32_t kProgressMinTokens = 256;

std::string shown(std::string_view piece) {
  std::string out;
  for (const char c : piece) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(static_cast<uint8_t>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void print_verbose_prompt(const Model& m, std::string_view text, std::span<const int32_t> ids) {
  std::fprintf(stderr, "prompt: '%.*s'\nnumber of tokens in prompt = %zu\n",
               static_cast<int>(text.size()), text.data(), ids.size());
  for (const int32_t id : ids) {
    std::fprintf(stderr, "%6d -> '%s'\n", id, shown(m.token_piece(id)).c_str());
  }
}

std::function<void(int32_t, int32_t)> prefill_progress_printer(bool json) {
  if (json || isatty(STDERR_FILENO) == 0) return {};
  return [](int32_t done, int32_t total) {
    if (total < kProgressMinTokens) return;
    if (done >= total) {
      std::fputs("\r\033[K", stderr);  // erase the line: the reply starts clean
    } else {
      std::fprintf(stderr, "\rprefill: %d/%d tokens (%d%%)", done, total,
                   static_cast<int>(100LL * done / total));
    }
    std::fflush(stderr);
  };
}

}  // namespace geniex::cli

namespace geniex::cli {

std::string timings_line(const Generation& g) {
  const Timings& t = g.timings;
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "prompt: %d tokens (%d cached) %.1f ms, %.2f tok/s | generation: %d tokens "
                "%.1f ms, %.2f tok/s | TTFT %.1f ms | stop: %s",
                t.prompt_tokens, t.cached_tokens, t.prompt_ms, t.prompt_tokens_per_second(),
                t.generated_tokens, t.generation_ms, t.generation_tokens_per_second(), t.ttft_ms,
                std::string(stop_reason_name(g.stop_reason)).c_str());
  return buf;
}

}  // namespace geniex::cli
