#include "tokenizer/chat_template_source.h"

#include "tokenizer/jinja/chat_template.h"

namespace geniex::tokenizer {

Result<ChatTemplateSource> chat_template_source(const gguf::GgufFile& file) {
  if (file.find("tokenizer.chat_template") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(std::string text, file.get_string("tokenizer.chat_template"));
    return ChatTemplateSource{std::move(text), ChatTemplateOrigin::kFile, {}};
  }
  std::string arch = "(unknown)";
  if (file.find("general.architecture") != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(arch, file.get_string("general.architecture"));
  }
  // GGUF architecture names are the family names the built-in table knows, except that
  // "llama" files may be Llama 2/3 or Mistral: Llama 3 vocabularies are BPE ("gpt2"),
  // Llama 2 and Mistral ones SentencePiece ("llama").
  std::string family = arch;
  if (arch == "llama") {
    const gguf::Value* model = file.find("tokenizer.ggml.model");
    const std::string* m = model ? model->as_string() : nullptr;
    family = (m != nullptr && *m == "gpt2") ? "llama3" : "mistral";
  }
  if (auto text = jinja::builtin_chat_template(family)) {
    return ChatTemplateSource{std::move(*text), ChatTemplateOrigin::kBuiltin, family};
  }
  return not_found("chat template: " + file.name() +
                   " has no tokenizer.chat_template and there is no built-in template for "
                   "architecture '" +
                   arch + "'; use raw prompts");
}

}  // namespace geniex::tokenizer
