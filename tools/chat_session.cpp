#include "chat_session.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "prompt_view.h"

namespace geniex::cli {
namespace {

constexpr const char* kCommandsHelp =
    "In the chat:\n"
    "  /system TEXT   set the system message (/system alone removes it)\n"
    "  /reset         forget the conversation\n"
    "  /image PATH    attach an image to your next message (repeat for more; a vision model:\n"
    "                 --mmproj); /image alone lists the attached ones. Image i goes at the\n"
    "                 message's i-th <image>, or all before the text when it has none\n"
    "  /exit, /quit   leave (Ctrl-D too)\n"
    "  /help          this list\n"
    "  A line ending in \\ continues on the next line; text between \"\"\" and \"\"\" is one "
    "turn.\n"
    "  Ctrl-C stops the reply. When the conversation outgrows the context, the oldest turns "
    "are dropped (a note says so).";

std::atomic<bool> g_interrupted{false};

extern "C" void on_chat_sigint(int) { g_interrupted.store(true); }

bool print_piece(std::string_view text, int32_t) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return !g_interrupted.load();
}

std::vector<ChatMessage> with_system(const std::string& system,
                                     const std::vector<ChatMessage>& turns) {
  std::vector<ChatMessage> all;
  all.reserve(turns.size() + 1);
  if (!system.empty()) all.push_back({"system", system});
  all.insert(all.end(), turns.begin(), turns.end());
  return all;
}

// Drops the oldest exchanges until the prompt leaves `reserve` tokens of room for the reply.
// Returns the prompt's tokens (what chat() would feed), or an error when the newest message
// alone does not fit.
Result<std::vector<int32_t>> fit_context(const Model& m, const std::string& system,
                                         std::vector<ChatMessage>& turns, int32_t reserve,
                                         int& dropped) {
  const auto n_ctx = static_cast<size_t>(m.info().n_ctx);
  for (;;) {
    GENIEX_ASSIGN_OR_RETURN(auto ids, m.chat_tokens(with_system(system, turns)));
    if (ids.size() + static_cast<size_t>(reserve) <= n_ctx) return ids;
    if (turns.size() <= 1) {
      return out_of_range("this message takes " + std::to_string(ids.size()) +
                          " tokens with the template, and the context holds " +
                          std::to_string(n_ctx) + " (" + std::to_string(reserve) +
                          " kept for the reply): shorten it, or raise -c");
    }
    // An exchange is a user turn and the reply to it.
    const size_t n = turns.size() >= 2 && turns[1].role == "assistant" ? 2 : 1;
    turns.erase(turns.begin(), turns.begin() + static_cast<std::ptrdiff_t>(n));
    ++dropped;
  }
}

}  // namespace

std::optional<std::string> read_turn(std::istream& in, const std::function<void()>& more) {
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  if (line.starts_with("\"\"\"")) {
    std::string text = line.substr(3);
    if (text.size() >= 3 && text.ends_with("\"\"\"")) return text.substr(0, text.size() - 3);
    for (;;) {
      if (more) more();
      if (!std::getline(in, line)) return text;  // end of input closes the block
      text += '\n';
      if (line.ends_with("\"\"\"")) {
        text += line.substr(0, line.size() - 3);
        return text;
      }
      text += line;
    }
  }
  std::string text;
  while (line.ends_with("\\")) {
    text += line.substr(0, line.size() - 1);
    text += '\n';
    if (more) more();
    if (!std::getline(in, line)) return text;
  }
  text += line;
  return text;
}

int run_chat_session(PreparedModel& prepared, const ChatSessionOptions& o,
                     const std::string& first) {
  auto model = load_model(prepared, o.m);
  if (!model.ok()) {
    std::fprintf(stderr, "geniex: %s\n", model.status().message().c_str());
    return kExitError;
  }
  note_chat_template(*model);
  const bool tty = isatty(STDIN_FILENO) != 0;
  const ModelInfo& info = model->info();
  if (tty) {
    std::fprintf(stderr,
                 "geniex chat — %s (context %d). /help lists the commands; /exit or "
                 "Ctrl-D quits.\n",
                 info.name.empty() ? info.path.c_str() : info.name.c_str(), info.n_ctx);
  }
  GenerationConfig cfg = config_of(o.s);
  cfg.on_prefill_progress = prefill_progress_printer(false);
  // Room kept for the reply when old turns are dropped.
  const int32_t reserve =
      std::max(1, std::min(o.s.max_tokens < 0 ? info.n_ctx / 4 : o.s.max_tokens, info.n_ctx / 4));
  std::string system = o.system;
  std::vector<ChatMessage> turns;
  std::vector<std::string> image_paths;  // /image: attached to the next user turn
  std::string pending = first;
  const auto prompt = [tty] {
    if (tty) std::fputs("> ", stderr);
  };
  const auto more = [tty] {
    if (tty) std::fputs("... ", stderr);
  };
  for (;;) {
    std::string line;
    if (!pending.empty()) {
      line = std::move(pending);
      pending.clear();
    } else {
      prompt();
      auto turn = read_turn(std::cin, more);
      if (!turn) break;
      line = std::move(*turn);
    }
    if (line == "/exit" || line == "/quit") break;
    if (line == "/help" || line == "/?") {
      std::fprintf(stderr, "%s\n", kCommandsHelp);
      continue;
    }
    if (line == "/reset") {
      turns.clear();
      image_paths.clear();
      model->reset();
      if (tty) std::fputs("(conversation reset)\n", stderr);
      continue;
    }
    if (line == "/image" || line.starts_with("/image ")) {
      std::string path = line.size() > 7 ? line.substr(7) : std::string();
      while (!path.empty() && (path.back() == ' ' || path.back() == '\t' || path.back() == '\r')) {
        path.pop_back();
      }
      while (!path.empty() && (path.front() == ' ' || path.front() == '\t')) path.erase(0, 1);
      if (path.empty()) {
        if (image_paths.empty()) {
          std::fputs("(no images attached; /image PATH attaches one)\n", stderr);
        } else {
          std::fprintf(stderr, "(%zu image%s attached to the next message)\n", image_paths.size(),
                       image_paths.size() == 1 ? "" : "s");
          for (size_t i = 0; i < image_paths.size(); ++i) {
            std::fprintf(stderr, "  %zu. %s\n", i + 1, image_paths[i].c_str());
          }
        }
        continue;
      }
      if (info.mmproj_path.empty()) {
        std::fprintf(stderr, "geniex: %s\n",
                     no_mmproj_error(info.path, o.m.no_mmproj).message().c_str());
        continue;
      }
      if (Status s = check_image_file(path); !s.ok()) {
        std::fprintf(stderr, "geniex: %s\n", s.message().c_str());
        continue;
      }
      image_paths.push_back(path);
      if (tty) {
        std::fprintf(stderr, "(image %zu attached: %s)\n", image_paths.size(), path.c_str());
      }
      continue;
    }
    if (line == "/system" || line.starts_with("/system ")) {
      system = line.size() > 8 ? line.substr(8) : std::string();
      if (tty)
        std::fputs(system.empty() ? "(system message removed)\n" : "(system message set)\n",
                   stderr);
      continue;
    }
    if (line.empty()) continue;
    turns.push_back({"user", line});
    if (!image_paths.empty()) {
      std::vector<Image> images;
      for (const std::string& p : image_paths) images.push_back(Image::from_file(p));
      image_paths.clear();  // used by this turn, whether it succeeds or not
      auto parts = image_message_parts(line, images, info.image_marker);
      if (!parts.ok()) {
        turns.pop_back();
        std::fprintf(stderr, "geniex: %s (the images were dropped: attach them again)\n",
                     parts.status().message().c_str());
        continue;
      }
      turns.back().parts = std::move(*parts);
    }
    int dropped = 0;
    auto fit = fit_context(*model, system, turns, reserve, dropped);
    if (dropped > 0) {
      std::fprintf(stderr,
                   "geniex: note: the conversation outgrew the %d-token context; dropped the %d "
                   "oldest exchange%s\n",
                   info.n_ctx, dropped, dropped == 1 ? "" : "s");
    }
    if (!fit.ok()) {
      turns.pop_back();
      std::fprintf(stderr, "geniex: %s\n", fit.status().message().c_str());
      continue;
    }
    const std::vector<ChatMessage> msgs = with_system(system, turns);
    if (o.verbose_prompt) {
      auto rendered = model->apply_chat_template(msgs);
      if (rendered.ok()) print_verbose_prompt(*model, *rendered, *fit);
    }
    g_interrupted.store(false);
    std::signal(SIGINT, on_chat_sigint);
    // The tokens fit_context made are the ones chat() would make: feed them directly. With
    // images chat() places them (each image one token in *fit, many in the prompt); the prefix
    // cache keeps the images of earlier turns.
    const bool with_images = std::any_of(msgs.begin(), msgs.end(), [](const ChatMessage& m) {
      return std::any_of(m.parts.begin(), m.parts.end(),
                         [](const ContentPart& p) { return p.type == ContentPart::Type::kImage; });
    });
    auto gen = with_images ? model->chat(msgs, cfg, print_piece)
                           : model->generate(std::span<const int32_t>(*fit), cfg, print_piece);
    std::signal(SIGINT, SIG_DFL);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!gen.ok()) {
      turns.pop_back();
      std::fprintf(stderr, "geniex: %s\n", gen.status().message().c_str());
      continue;
    }
    turns.push_back({"assistant", gen->text});
    if (gen->stop_reason == StopReason::kContextFull) {
      std::fputs("geniex: note: the reply filled the context; older turns will be dropped\n",
                 stderr);
    }
    if (o.m.verbose) {
      std::fprintf(stderr, "geniex: seed %llu\n", static_cast<unsigned long long>(gen->seed));
    }
    if (!o.m.save_state.empty()) {
      if (Status s = model->save_state(o.m.save_state); !s.ok()) {
        std::fprintf(stderr, "geniex: %s\n", s.message().c_str());
      }
    }
    if (tty) std::fprintf(stderr, "[%s]\n", timings_line(*gen).c_str());
  }
  return kExitOk;
}

Command register_chat_command(CLI::App& parent) {
  auto opts = std::make_shared<ChatSessionOptions>();
  CLI::App* c = parent.add_subcommand(
      "chat", "Interactive multi-turn chat on the model's chat template (reads standard input)");
  add_model_flags(c, opts->m);
  add_sampling_flags(c, opts->s);
  c->add_option("--system-prompt,--system", opts->system, "system message (-sys works too)");
  c->add_flag("--verbose-prompt", opts->verbose_prompt,
              "print the text the model reads and its tokens to stderr before each reply");
  c->footer(kCommandsHelp);
  return {c, [opts] {
            if (Status s = validate_sampling(opts->s); !s.ok()) {
              std::fprintf(stderr, "geniex chat: %s\n", s.message().c_str());
              return kExitUsage;
            }
            auto prepared = prepare_model(opts->m, DefaultModel::kChat);
            if (!prepared.ok()) {
              std::fprintf(stderr, "geniex chat: %s\n", prepared.status().message().c_str());
              return prepared.status().code() == StatusCode::kInvalidArgument ? kExitUsage
                                                                              : kExitError;
            }
            return run_chat_session(*prepared, *opts, std::string());
          }};
}

}  // namespace geniex::cli
