#include "flag_compat.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "number_flags.h"

namespace geniex::cli {
namespace {

// llama.cpp's single-dash long flags and ours. Flags that need a value keep it as the next word.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kRewrites = {{
    {"-sys", "--system-prompt"},
    {"-ngl", "--n-gpu-layers"},
    {"-fa", "--flash-attn"},
    {"-cnv", "--conversation"},
    {"-no-cnv", "--no-conversation"},
    {"-np", "--parallel"},
}};

}  // namespace

std::vector<std::string> rewrite_llama_flags(int argc, const char* const* argv) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(argc));
  bool literal = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (i > 0 && !literal) {
      if (a == "--") {
        literal = true;
      } else {
        // "-sys=TEXT" is not a llama.cpp spelling; only the whole word is rewritten.
        for (const auto& [from, to] : kRewrites) {
          if (a == from) {
            a = std::string(to);
            break;
          }
        }
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

void add_ignored_llama_flags(CLI::App* c, IgnoredFlags& f) {
  c->add_option("--n-gpu-layers,--gpu-layers", f.n_gpu_layers,
                "llama.cpp's -ngl N (works too): --offload-layers N-1 (llama.cpp counts the "
                "output head as a layer); auto/all = no limit")
      ->group("llama.cpp flags (mapped to ours)");
  const std::string group = "llama.cpp flags (accepted, ignored here)";
  c->add_option("--flash-attn", f.flash_attn,
                "ignored: attention is always fused here; -fa [on|off|auto] works too")
      ->expected(0, 1)
      ->group(group);
  c->add_flag("--mlock", f.mlock, "ignored: the model is memory-mapped")->group(group);
  c->add_flag("--no-mmap", f.no_mmap, "ignored: the model is always memory-mapped")->group(group);
}

std::vector<std::string> ignored_flag_notes(const CLI::App& c) {
  std::vector<std::string> notes;
  const auto note = [&](const char* name, const char* why) {
    const CLI::Option* o = c.get_option_no_throw(name);
    if (o != nullptr && o->count() > 0) notes.push_back(std::string("note: ") + why);
  };
  const CLI::Option* ngl = c.get_option_no_throw("--n-gpu-layers");
  if (ngl != nullptr && ngl->count() > 0 && !ngl->results().empty() &&
      ngl->results().back() == "1") {
    notes.push_back(
        "note: -ngl 1 offloads nothing here (llama.cpp would offload the output head alone; "
        "GenieX keeps the head with the last offloaded layer): use -ngl 2 / --offload-layers 1 "
        "for the last layer and the head");
  }
  note("--flash-attn", "-fa/--flash-attn is ignored: attention is always fused here");
  note("--mlock", "--mlock is ignored: the model is memory-mapped");
  note("--no-mmap", "--no-mmap is ignored: the model is always memory-mapped");
  return notes;
}

Result<int32_t> offload_from_ngl(std::string_view value) {
  if (value == "auto" || value == "all") return -1;
  GENIEX_ASSIGN_OR_RETURN(const int64_t n, parse_count("-ngl/--n-gpu-layers", value,
                                                       std::numeric_limits<int32_t>::min(),
                                                       std::numeric_limits<int32_t>::max()));
  if (n < 0) return -1;
  return static_cast<int32_t>(n == 0 ? 0 : n - 1);
}

Result<int32_t> offload_layers_of(int32_t offload, const IgnoredFlags& f) {
  if (f.n_gpu_layers.empty()) return offload;
  if (offload != -1) {
    return invalid_argument(
        "--offload-layers and -ngl/--n-gpu-layers both given: give one (-ngl N is "
        "--offload-layers N-1)");
  }
  return offload_from_ngl(f.n_gpu_layers);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance, three rows.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  const size_t core = word.size() - std::min(word.size(), word.find_first_not_of('-'));
  const size_t limit = core <= 3 ? 1 : 2;
  if (best_d <= limit) return best;
  // A unique prefix ("--temperat" -> "--temperature").
  std::string only;
  for (const std::string& c : candidates) {
    if (word.size() >= 3 && c.starts_with(word)) {
      if (!only.empty()) return "";
      only = c;
    }
  }
  return only;
}

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
  }
  return out;
}

}  // namespace geniex::cli
