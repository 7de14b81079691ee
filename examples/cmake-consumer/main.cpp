// Embeds GenieX through its public C++ API: load a GGUF model, complete a prompt greedily.
//   consumer MODEL.gguf [PROMPT] [MAX_TOKENS]
#include <cstdio>
#include <cstdlib>
#include <geniex/geniex.hpp>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [MAX_TOKENS]\n", argv[0]);
    return 2;
  }
  const std::string prompt = argc > 2 ? argv[2] : "The capital of France is";
  auto model = geniex::ModelBuilder(argv[1])
                   .with_device(geniex::Device::cpu())
                   .with_context_size(512)
                   .build();
  if (!model.ok()) {
    std::fprintf(stderr, "load failed: %s\n", model.status().to_string().c_str());
    return 1;
  }
  geniex::GenerationConfig config;
  config.max_tokens = argc > 3 ? std::atoi(argv[3]) : 16;
  config.temperature = 0.0f;  // greedy: the same text as `geniex run --temp 0`
  auto out = model->generate(prompt, config);
  if (!out.ok()) {
    std::fprintf(stderr, "generate failed: %s\n", out.status().to_string().c_str());
    return 1;
  }
  std::printf("%s\n", out->text.c_str());
  std::fprintf(stderr, "tokens: %zu, stop: %s\n", out->tokens.size(),
               std::string(geniex::stop_reason_name(out->stop_reason)).c_str());
  return 0;
}
