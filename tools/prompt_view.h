// What run and chat show about a prompt on stderr: --verbose-prompt (the text the model reads and
// its tokens, as llama.cpp prints them) and a prefill progress line for long prompts on a TTY.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "geniex/geniex.hpp"

namespace geniex::cli {

/// Prints `text` and one `id -> 'piece'` line per token to stderr.
void print_verbose_prompt(const Model& m, std::string_view text, std::span<const int32_t> ids);

/// A GenerationConfig::on_prefill_progress that redraws "prefill: done/total tokens" on stderr
/// when stderr is a terminal and the prompt is long enough to wait for; empty otherwise (never
/// in --json or piped output). The line is erased when prefill ends.
std::function<void(int32_t, int32_t)> prefill_progress_printer(bool json);

}  // namespace geniex::cli

namespace geniex::cli {

/// "prompt: N tokens (C cached) ... | generation: ... | TTFT ... | stop: REASON".
std::string timings_line(const Generation& g);

}  // namespace geniex::cli
