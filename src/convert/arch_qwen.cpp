// qwen2 (Qwen2 / Qwen2.5) and qwen3: llama.cpp's Qwen2Model / Qwen3Model rules. Same tensor
// names as llama (plus q/k/v biases for qwen2, q_norm / k_norm for qwen3), no row permutation
// (GGML's NEOX RoPE matches Hugging Face's rotate-half layout), no extra hyperparameters.
#include "convert/arch.h"
#include "convert/tensor_names.h"

namespace geniex::convert {
namespace {

class QwenConverter : public ArchConverter {
 public:
  QwenConverter(std::string arch, uint64_t n_block) : arch_(std::move(arch)), n_block_(n_block) {}

  std::string gguf_arch() const override { return arch_; }
  Status add_params(const HfConfig&, gguf::GgufWriter&) const override { return {}; }
  Result<std::optional<std::string>> map_name(std::string_view hf_name) const override {
    return map_decoder_tensor_name(hf_name, n_block_);
  }
  Status transform(std::string_view, ConvTensor&) const override { return {}; }
  Result<std::vector<ConvTensor>> extra_tensors() const override {
    return std::vector<ConvTensor>{};
  }

 private:
  std::string arch_;
  uint64_t n_block_;
};

}  // namespace

Result<std::unique_ptr<ArchConverter>> make_qwen_converter(const HfConfig& cfg,
                                                           const std::string& gguf_arch) {
  GENIEX_ASSIGN_OR_RETURN(uint64_t n_block, cfg.require_uint({"n_layers", "num_hidden_layers",
                                                              "n_layer", "num_layers"}));
  return std::unique_ptr<ArchConverter>(std::make_unique<QwenConverter>(gguf_arch, n_block));
}

}  // namespace geniex::convert
