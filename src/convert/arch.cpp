#include "convert/arch.h"

namespace geniex::convert {

Status ArchConverter::add_vocab(const VocabInputs& in, gguf::GgufWriter& w) const {
  return add_bpe_vocab(in, w);
}

Result<std::unique_ptr<ArchConverter>> make_arch_converter(const HfConfig& cfg) {
  if (cfg.hf_arch == "LlamaForCausalLM" || cfg.hf_arch == "MistralForCausalLM") {
    return make_llama_converter(cfg);
  }
  if (cfg.hf_arch == "Lfm2ForCausalLM" || cfg.hf_arch == "LFM2ForCausalLM") {
    return make_lfm2_converter(cfg);
  }
  if (cfg.hf_arch == "Gemma3ForCausalLM") return make_gemma3_converter(cfg);
  if (cfg.hf_arch == "Qwen2ForCausalLM") return make_qwen_converter(cfg, "qwen2");
  if (cfg.hf_arch == "Qwen3ForCausalLM") return make_qwen_converter(cfg, "qwen3");
  return unimplemented(cfg.path + ": architecture '" + cfg.hf_arch +
                       "' is not supported by geniex convert (supported: LlamaForCausalLM, "
                       "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, "
                       "Lfm2ForCausalLM)");
}

}  // namespace geniex::convert
