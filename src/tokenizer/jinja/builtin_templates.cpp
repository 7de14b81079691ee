// Fallback chat templates by model family, written for GenieX in Jinja. They follow each
// family's published prompt format for plain text chat (no tool calling).
#include <string>

#include "tokenizer/jinja/chat_template.h"

namespace geniex::jinja {
namespace {

// Message content may be a string or a list of {type: text|image, ...} parts.
constexpr const char* kTextMacro = R"J({%- macro text(c) -%}
{%- if c is string -%}{{ c }}
{%- elif c is iterable -%}{%- for p in c -%}{%- if p.type == 'text' -%}{{ p.text }}{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
)J";

constexpr const char* kGemma = R"J({{- bos_token -}}
{%- set ns = namespace(prefix='') -%}
{%- for m in messages -%}
{%- if m.role == 'system' -%}
{%- set ns.prefix = ns.prefix + text(m.content) + '\n\n' -%}
{%- else -%}
{{- '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + '\n' + ns.prefix + (text(m.content) | trim) + '<end_of_turn>\n' -}}
{%- set ns.prefix = '' -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start_of_turn>model\n' -}}{%- endif -%}
)J";

constexpr const char* kLlama3 = R"J({{- bos_token -}}
{%- for m in messages -%}
{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + (text(m.content) | trim) + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%}
)J";

constexpr const char* kMistral = R"J({%- set ns = namespace(system='', last_user=-1) -%}
{%- for m in messages -%}
{%- if m.role == 'system' -%}{%- set ns.system = text(m.content) -%}
{%- elif m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}
{%- endfor -%}
{{- bos_token -}}
{%- for m in messages -%}
{%- if m.role == 'user' -%}
{{- '[INST] ' + ((ns.system + '\n\n') if (ns.system and loop.index0 == ns.last_user) else '') + text(m.content) + '[/INST]' -}}
{%- elif m.role == 'assistant' -%}
{{- ' ' + (text(m.content) | trim) + eos_token -}}
{%- endif -%}
{%- endfor -%}
)J";

constexpr const char* kChatml = R"J({%- for m in messages -%}
{{- '<|im_start|>' + m.role + '\n' + text(m.content) + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
)J";

constexpr const char* kLfm2 = R"J({{- bos_token -}}
{%- for m in messages -%}
{{- '<|im_start|>' + m.role + '\n' + text(m.content) + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
)J";

}  // namespace

std::optional<std::string> builtin_chat_template(std::string_view family) {
  const char* body = nullptr;
  if (family == "gemma" || family == "gemma2" || family == "gemma3")
    body = kGemma;
  else if (family == "llama" || family == "llama3")
    body = kLlama3;
  else if (family == "mistral")
    body = kMistral;
  else if (family == "qwen" || family == "qwen2" || family == "qwen3" || family == "chatml")
    body = kChatml;
  else if (family == "lfm2")
    body = kLfm2;
  if (!body) return std::nullopt;
  return std::string(kTextMacro) + body;
}

}  // namespace geniex::jinja
