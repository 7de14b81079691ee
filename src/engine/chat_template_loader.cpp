#include "engine/chat_template_loader.h"

#include "tokenizer/jinja/chat_template.h"

namespace geniex::engine {

Result<LoadedChatTemplate> load_chat_template(std::string_view text, const std::string& bos,
                                              const std::string& eos) {
  LoadedChatTemplate out;
  auto parsed = jinja::Template::parse(text);
  if (!parsed.ok()) {
    if (parsed.status().code() == StatusCode::kResourceExhausted) {
      return resource_exhausted("the model's chat template is refused: " +
                                parsed.status().message());
    }
    out.error = parsed.status();
    return out;
  }
  jinja::ChatTemplateInputs sample;
  sample.messages = nlohmann::ordered_json::array({
      {{"role", "system"}, {"content", "You are a helpful assistant."}},
      {{"role", "user"}, {"content", "Hello!"}},
      {{"role", "assistant"}, {"content", "Hi. How can I help?"}},
      {{"role", "user"}, {"content", "Tell me a joke."}},
  });
  sample.add_generation_prompt = true;
  sample.bos_token = bos;
  sample.eos_token = eos;
  // Templates may reject a sample (raise_exception on roles they do not support); only a limit
  // exceeded on an ordinary conversation says the template itself is hostile.
  auto rendered = jinja::render_chat_template(*parsed, sample);
  if (!rendered.ok() && rendered.status().code() == StatusCode::kResourceExhausted) {
    return resource_exhausted(
        "the model's chat template exceeds a limit rendering a four-message conversation: " +
        rendered.status().message());
  }
  out.parsed = std::move(*parsed);
  return out;
}

}  // namespace geniex::engine
