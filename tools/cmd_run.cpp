#include "cmd_run.h"

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat_session.h"
#include "model_flags.h"
#include "prompt_view.h"
#include "sampling_flags.h"
#include "text_input.h"

namespace geniex::cli {
namespace {

using Json = nlohmann::ordered_json;

struct RunOptions {
  ModelOptions m;
  SamplingOptions s;
  std::string prompt;
  std::string file;
  std::string system;
  std::vector<std::string> images;  ///< --image, in order
  std::string json_schema_file;     ///< --json-schema
  bool raw = false;
  bool json = false;
  bool no_parse_special = false;
  bool verbose_prompt = false;
  bool conversation = false;
  bool no_conversation = false;
};

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex: %s\n", what.c_str());
  return kExitError;
}

int usage(const std::string& what) {
  std::fprintf(stderr, "geniex run: %s\n", what.c_str());
  return kExitUsage;
}

// Streams text to stdout; returns false (cancel) after Ctrl-C.
bool print_piece(std::string_view text, int32_t) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return !g_interrupted.load();
}

Json json_of(const Model& model, const Generation& gen) {
  const Timings& t = gen.timings;
  Json j;
  j["text"] = gen.text;
  j["prompt_tokens"] = gen.prompt_tokens.size();
  j["generated_tokens"] = gen.tokens.size();
  j["prompt_token_ids"] = gen.prompt_tokens;
  j["token_ids"] = gen.tokens;
  j["stop_reason"] = std::string(stop_reason_name(gen.stop_reason));
  j["seed"] = gen.seed;
  j["timings"] = {{"prompt_tokens", t.prompt_tokens},
                  {"cached_tokens", t.cached_tokens},
                  {"generated_tokens", t.generated_tokens},
                  {"prompt_ms", t.prompt_ms},
                  {"generation_ms", t.generation_ms},
                  {"ttft_ms", t.ttft_ms},
                  {"prompt_tokens_per_second", t.prompt_tokens_per_second()},
                  {"generation_tokens_per_second", t.generation_tokens_per_second()}};
  const KvStats kv = model.kv_stats();
  j["kv"] = {{"bytes_per_token", kv.bytes_per_token},
             {"cached_tokens", kv.cached_tokens},
             {"bytes_resident", kv.bytes_resident},
             {"bytes_spilled", kv.bytes_spilled},
             {"prefix_hits", kv.prefix_hits}};
  j["model"] = model.info().path;
  j["n_ctx"] = model.info().n_ctx;
  j["n_threads"] = model.info().n_threads;
  j["placement"] = model.info().placement;
  return j;
}

int run_run(const RunOptions& o) {
  if (o.conversation && o.no_conversation) {
    return usage("--conversation and --no-conversation contradict each other");
  }
  if (o.conversation && o.json) return usage("--json does not go with --conversation");
  if (o.conversation && o.raw) return usage("--raw does not go with --conversation");
  if (!o.prompt.empty() && !o.file.empty()) return usage("give -p TEXT or -f FILE, not both");
  if (o.raw && !o.system.empty()) {
    return usage("--system-prompt needs the chat template; --raw completes the text as is");
  }
  if (Status s = validate_sampling(o.s); !s.ok()) return usage(s.message());
  if (!o.images.empty() && o.conversation) {
    return usage("--image does not go with --conversation: attach images with /image PATH");
  }
  for (const std::string& path : o.images) {
    if (Status s = check_image_file(path); !s.ok()) return fail(s.message());
  }
  std::string schema;
  if (!o.json_schema_file.empty()) {  // checked before any model loads
    auto t = read_text_file(o.json_schema_file);
    if (!t.ok()) return fail(t.status().message());
    if (Status s = check_json_schema(*t); !s.ok()) {
      return usage("--json-schema " + o.json_schema_file + ": " + s.message());
    }
    schema = std::move(*t);
  }
  auto prepared = prepare_model(o.m, o.raw ? DefaultModel::kText : DefaultModel::kChat);
  if (!prepared.ok()) {
    return prepared.status().code() == StatusCode::kInvalidArgument
               ? usage(prepared.status().message())
               : fail(prepared.status().message());
  }
  if (o.conversation) {
    // llama-cli -cnv: an interactive chat, the prompt (if any) as the first turn.
    ChatSessionOptions co{o.m, o.s, o.system, o.verbose_prompt};
    return run_chat_session(*prepared, co, o.prompt);
  }
  auto text = read_text_input(o.prompt, o.file);
  if (!text.ok()) return fail(text.status().message());
  if (text->empty()) {
    return usage("no prompt: give -p TEXT, -f FILE (- for standard input), or pipe it in");
  }
  auto model = load_model(*prepared, o.m);
  if (!model.ok()) return fail(model.status().message());
  std::vector<Image> images;
  for (const std::string& path : o.images) images.push_back(Image::from_file(path));
  if (!images.empty() && model->info().mmproj_path.empty()) {
    return fail(no_mmproj_error(prepared->path, o.m.no_mmproj).message());
  }
  GenerationConfig cfg = config_of(o.s);
  cfg.parse_special = !o.no_parse_special;
  cfg.on_prefill_progress = prefill_progress_printer(o.json);
  cfg.json_schema = schema;
  std::vector<ChatMessage> msgs;
  if (!o.raw) {
    note_chat_template(*model);
    if (!o.system.empty()) msgs.push_back({"system", o.system});
    msgs.push_back({"user", *text});
    if (!images.empty()) {
      auto parts = image_message_parts(*text, images, model->info().image_marker);
      if (!parts.ok()) return usage(parts.status().message());
      msgs.back().parts = std::move(*parts);
    }
  }
  if (o.verbose_prompt) {
    if (o.raw) {
      auto ids = model->tokenize(*text, cfg.add_special, cfg.parse_special);
      if (!ids.ok()) return fail(ids.status().message());
      print_verbose_prompt(*model, *text, *ids);
    } else {
      auto rendered = model->apply_chat_template(msgs);
      auto ids = model->chat_tokens(msgs);
      if (!rendered.ok() || !ids.ok()) {
        return fail((rendered.ok() ? ids.status() : rendered.status()).message());
      }
      print_verbose_prompt(*model, *rendered, *ids);
    }
  }
  std::signal(SIGINT, on_sigint);
  TokenCallback cb;
  if (!o.json) cb = print_piece;
  Result<Generation> gen =
      o.raw ? model->generate(*text, images, cfg, cb) : model->chat(msgs, cfg, cb);
  std::signal(SIGINT, SIG_DFL);
  if (!gen.ok()) {
    if (!o.json) std::fputc('\n', stdout);
    return fail(gen.status().message());
  }
  if (o.m.verbose)
    std::fprintf(stderr, "geniex: seed %llu\n", static_cast<unsigned long long>(gen->seed));
  if (!o.m.save_state.empty()) {
    if (Status s = model->save_state(o.m.save_state); !s.ok()) return fail(s.message());
  }
  if (o.json) {
    std::printf("%s\n",
                json_of(*model, *gen).dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
  } else {
    std::fputc('\n', stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", timings_line(*gen).c_str());
  }
  return kExitOk;
}

}  // namespace

Command register_run(CLI::App& parent) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* c = parent.add_subcommand(
      "run",
      "Generate text from a prompt (streamed). Without --raw the prompt is a user turn of the "
      "model's chat template; with --raw it is completed as is.");
  add_model_flags(c, opts->m);
  add_sampling_flags(c, opts->s);
  c->add_option("-p,--prompt", opts->prompt, "prompt text (default: standard input when piped)");
  c->add_option("-f,--file", opts->file, "read the prompt from a file (- = standard input)");
  c->add_option("--image", opts->images,
                "an image for a vision-language model (JPEG, PNG, BMP, GIF, WebP); repeat for "
                "more. Image i goes at the prompt's i-th <image> marker, or all before the text "
                "when it has none")
      ->allow_extra_args(false);
  c->add_option("--json-schema", opts->json_schema_file,
                "a JSON Schema file: the answer is JSON that satisfies it (constrained sampling; "
                "unsupported keywords are named)");
  c->add_option("--system-prompt,--system", opts->system,
                "system message (chat mode; -sys works too)");
  c->add_flag("--raw", opts->raw, "complete the text as is: no chat template");
  c->add_flag("--no-parse-special", opts->no_parse_special,
              "with --raw: keep special-token text such as <|im_start|> as plain text (by "
              "default it becomes the special token, as in llama.cpp)");
  c->add_flag("--verbose-prompt", opts->verbose_prompt,
              "print the text the model reads and its tokens to stderr first");
  c->add_flag("--conversation", opts->conversation,
              "interactive chat, the prompt as the first turn (-cnv; same as `geniex chat`)");
  c->add_flag("--no-conversation", opts->no_conversation,
              "one prompt, one answer (the default; -no-cnv)");
  c->add_flag("--json", opts->json, "print one JSON object instead of streaming");
  return {c, [opts] { return run_run(*opts); }};
}

Command register_chat(CLI::App& parent) { return register_chat_command(parent); }

}  // namespace geniex::cli
