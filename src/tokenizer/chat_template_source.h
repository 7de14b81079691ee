// Which chat template a model uses: the Jinja text stored in its GGUF
// (`tokenizer.chat_template`), else the built-in template of its architecture's family.
#pragma once

#include <string>

#include "core/status.h"
#include "gguf/gguf_reader.h"

namespace geniex::tokenizer {

/// Where a chat template came from.
enum class ChatTemplateOrigin { kFile, kBuiltin };

struct ChatTemplateSource {
  std::string text;
  ChatTemplateOrigin origin = ChatTemplateOrigin::kFile;
  std::string family;  ///< the built-in family used (empty for kFile)
};

/// The model's chat template. NOT_FOUND when the file has none and its
/// `general.architecture` has no built-in fallback (the message names the architecture).
Result<ChatTemplateSource> chat_template_source(const gguf::GgufFile& file);

}  // namespace geniex::tokenizer
