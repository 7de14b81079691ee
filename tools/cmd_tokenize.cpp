#include "cmd_tokenize.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "default_model.h"
#include "gguf/gguf_reader.h"
#include "text_input.h"
#include "tokenizer/tokenizer.h"

namespace geniex::cli {
namespace {

using Json = nlohmann::ordered_json;

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool add_special = false;
  bool parse_special = false;
  bool json = false;
  bool text_given = false;  ///< the positional text was on the command line (even if empty)
};

struct DetokenizeOptions {
  std::string model;
  std::vector<int64_t> ids;
  bool render_special = false;
  bool remove_special = false;
};

int fail(const std::string& what) {
  std::fprintf(stderr, "geniex: %s\n", what.c_str());
  return kExitError;
}

Result<std::shared_ptr<const tokenizer::Tokenizer>> load_tokenizer(std::string path) {
  if (path.empty()) {
    GENIEX_ASSIGN_OR_RETURN(path, default_model_path());
  }
  GENIEX_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  auto tok = tokenizer::Tokenizer::from_gguf(file);
  if (!tok.ok()) return Status(tok.status().code(), path + ": " + tok.status().message());
  return *tok;
}

int run_tokenize(const TokenizeOptions& o) {
  std::string text = o.text;
  if (!o.text_given) {
    // -f FILE, -f - (standard input), or standard input when it is piped in.
    auto in = read_text_input("", o.file);
    if (!in.ok()) return fail(in.status().message());
    text = std::move(*in);
  }
  auto tok = load_tokenizer(o.model);
  if (!tok.ok()) return fail(tok.status().to_string());
  auto ids = (*tok)->encode(text, {.add_special = o.add_special, .parse_special = o.parse_special});
  if (!ids.ok()) return fail(ids.status().to_string());
  if (o.json) {
    Json root;
    root["ids"] = *ids;
    Json pieces = Json::array();
    for (int32_t id : *ids) {
      // Pieces of byte tokens may be partial UTF-8: show those bytes as \xNN escapes.
      const std::string p = (*tok)->token_to_piece(id, true);
      std::string shown;
      if (tokenizer::utf8_valid(p)) {
        shown = p;
      } else {
        for (char c : p) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(static_cast<uint8_t>(c)));
          shown += buf;
        }
      }
      pieces.push_back(shown);
    }
    root["pieces"] = std::move(pieces);
    std::printf("%s\n", root.dump().c_str());
  } else {
    std::string line;
    for (size_t i = 0; i < ids->size(); ++i) {
      if (i > 0) line += ' ';
      line += std::to_string((*ids)[i]);
    }
    std::printf("%s\n", line.c_str());
  }
  return kExitOk;
}

int run_detokenize(const DetokenizeOptions& o) {
  auto tok = load_tokenizer(o.model);
  if (!tok.ok()) return fail(tok.status().to_string());
  std::vector<int32_t> ids;
  for (int64_t id : o.ids) {
    if (id < 0 || id >= (*tok)->n_vocab()) {
      return fail("token id " + std::to_string(id) + " is outside the vocabulary (n_vocab " +
                  std::to_string((*tok)->n_vocab()) + ")");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  auto text =
      (*tok)->decode(ids, {.remove_special = o.remove_special, .render_special = o.render_special});
  if (!text.ok()) return fail(text.status().to_string());
  std::fwrite(text->data(), 1, text->size(), stdout);
  std::fputc('\n', stdout);
  return kExitOk;
}

}  // namespace

Command register_tokenize(CLI::App& parent) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* sub = parent.add_subcommand("tokenize", "Print the token ids of a text");
  sub->add_option("-m,--model", opts->model,
                  "GGUF file with the vocabulary (default: $GENIEX_MODEL or the default model)");
  auto* text =
      sub->add_option("text", opts->text, "Text to tokenize (default: standard input when piped)");
  auto* file = sub->add_option("-f,--file", opts->file,
                               "Read the text from a file, bytes as is (- = standard input)");
  text->excludes(file);
  file->excludes(text);
  sub->add_flag("--add-special", opts->add_special, "Add BOS/EOS as the vocabulary specifies");
  sub->add_flag("--parse-special", opts->parse_special,
                "Turn control-token text (e.g. <|im_end|>) into its id");
  sub->add_flag("--json", opts->json, "Print {\"ids\": [...], \"pieces\": [...]}");
  return {sub, [opts, text] {
            opts->text_given = text->count() > 0;
            return run_tokenize(*opts);
          }};
}

Command register_detokenize(CLI::App& parent) {
  auto opts = std::make_shared<DetokenizeOptions>();
  CLI::App* sub = parent.add_subcommand("detokenize", "Print the text of token ids");
  sub->add_option("-m,--model", opts->model,
                  "GGUF file with the vocabulary (default: $GENIEX_MODEL or the default model)");
  sub->add_option("ids", opts->ids, "Token ids")->required();
  sub->add_flag("--render-special", opts->render_special, "Print control tokens' text");
  sub->add_flag("--remove-special", opts->remove_special,
                "Drop a leading BOS / trailing EOS that the vocabulary adds");
  return {sub, [opts] { return run_detokenize(*opts); }};
}

}  // namespace geniex::cli
