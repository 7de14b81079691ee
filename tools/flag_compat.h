// llama.cpp habits on our command line: its single-dash long flags (-sys, -ngl, -fa, -cnv, ...)
// rewritten to our spelling before parsing (CLI11 takes only one-letter single-dash flags), -ngl
// mapped to --offload-layers, the flags that mean nothing here accepted and ignored with a note,
// and "did you mean" for typos.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace CLI {  // NOLINT(readability-identifier-naming): third-party name
class App;
}  // namespace CLI

namespace geniex::cli {

/// argv with llama.cpp's multi-letter single-dash flags spelled as ours (`-sys` ->
/// `--system-prompt`, `-ngl` -> `--n-gpu-layers`, `-fa` -> `--flash-attn`, `-cnv` ->
/// `--conversation`, `-no-cnv`, `-np` -> `--parallel`). Everything after a bare `--` is left
/// alone.
std::vector<std::string> rewrite_llama_flags(int argc, const char* const* argv);

/// Flags accepted for llama.cpp compatibility: -ngl (mapped by offload_layers_of) and those
/// that change nothing here (flash attention, memory locking), reported by `ignored_flag_notes`.
struct IgnoredFlags {
  std::string n_gpu_layers;  ///< -ngl/--n-gpu-layers as typed ("" when not given)
  std::string flash_attn;
  bool mlock = false;
  bool no_mmap = false;
};

void add_ignored_llama_flags(CLI::App* c, IgnoredFlags& f);

/// llama.cpp's -ngl N as our --offload-layers: llama.cpp offloads the last N of its n_layer + 1
/// offloadable layers, the output head counted as the last (so the head goes first), and keeps
/// the input embedding on the CPU. Here the head goes with the last offloaded layer, so
/// -ngl N (N >= 1) is --offload-layers N - 1, the same split for N >= 2; -ngl 0 is 0; -ngl 1
/// (llama.cpp: the head alone) is 0 (nothing offloaded: a note says so); "auto", "all" and any
/// negative number are -1 (no limit). kInvalidArgument naming the flag for anything else.
Result<int32_t> offload_from_ngl(std::string_view value);

/// The layer limit a command uses: `offload` (--offload-layers, -1 unless given) or -ngl from
/// `f`; both given is kInvalidArgument.
Result<int32_t> offload_layers_of(int32_t offload, const IgnoredFlags& f);

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
