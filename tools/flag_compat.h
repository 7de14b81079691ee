// llama.cpp habits on our command line: its single-dash long flags (-sys, -ngl, -fa, -cnv, ...)
// rewritten to our spelling before parsing (CLI11 takes only one-letter single-dash flags), the
// flags that mean nothing here accepted and ignored with a note, and "did you mean" for typos.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {  // NOLINT(readability-identifier-naming): third-party name
class App;
}  // namespace CLI

namespace geniex::cli {

/// argv with llama.cpp's multi-letter single-dash flags spelled as ours (`-sys` ->
/// `--system-prompt`, `-ngl` -> `--n-gpu-layers`, `-fa` -> `--flash-attn`, `-cnv` ->
/// `--conversation`, `-no-cnv`, `-np` -> `--parallel`). Everything after a bare `--` is left
/// alone.
std::vector<std::string> rewrite_llama_flags(int argc, const char* const* argv);

/// Flags accepted for llama.cpp compatibility that change nothing here (GPU offload, flash
/// attention, memory locking): parsed, then reported by `ignored_flag_notes`.
struct IgnoredFlags {
  std::string n_gpu_layers;
  std::string flash_attn;
  bool mlock = false;
  bool no_mmap = false;
};

void add_ignored_llama_flags(CLI::App* c, IgnoredFlags& f);

/// One "note: ..." line per ignored flag the user gave (empty when none).
std::vector<std::string> ignored_flag_notes(const CLI::App& c);

/// Edit distance (insert, delete, substitute, transpose neighbours).
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` when it is close enough to be a typo (distance <= 2, or <= 1
/// for words of 3 letters or fewer, or `word` is a prefix of exactly one candidate); else "".
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

/// Every flag spelling of `app` ("--ctx", "-c", ...), for suggestions and the docs test.
std::vector<std::string> flag_names(const CLI::App& app);

}  // namespace geniex::cli
