// libFuzzer target: parse and render arbitrary template text with a small fixed context.
// Must never crash, hang, or exhaust memory: every failure is a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/jinja/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geniex::jinja;
  std::string_view src(reinterpret_cast<const char*>(data), size);
  auto tmpl = Template::parse(src);
  if (!tmpl.ok()) return 0;

  static const ChatTemplateInputs* inputs = [] {
    auto* in = new ChatTemplateInputs();
    in->messages = nlohmann::ordered_json::parse(R"([
      {"role": "system", "content": "sys"},
      {"role": "user", "content": [{"type": "text", "text": "hi \u00e9 \ud83d\ude80"}, {"type": "image"}]},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "abc123XYZ", "type": "function", "function": {"name": "f", "arguments": {"x": 1, "y": [1.5, null]}}}]},
      {"role": "tool", "tool_call_id": "abc123XYZ", "content": "ok"},
      {"role": "user", "content": "bye"}])");
    in->tools = nlohmann::ordered_json::parse(
        R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])");
    in->add_generation_prompt = true;
    in->bos_token = "<s>";
    in->eos_token = "</s>";
    std::tm now{};
    now.tm_year = 125;
    now.tm_mday = 1;
    in->now = now;
    in->limits.max_output_bytes = size_t{1} << 20;
    in->limits.max_loop_iterations = 100'000;
    in->limits.max_call_depth = 32;
    in->limits.max_range = 10'000;
    in->limits.max_collection = 100'000;
    in->limits.max_work_bytes = uint64_t{32} << 20;
    in->limits.max_steps = 200'000;
    return in;
  }();
  auto out = render_chat_template(*tmpl, *inputs);
  (void)out;
  return 0;
}
