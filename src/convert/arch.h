// One Hugging Face architecture's conversion rules: its GGUF architecture name, the
// hyperparameters beyond the common text ones, tensor renaming and per-tensor transforms,
// and generated tensors. One implementation per file (arch_llama.cpp, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/hf_vocab.h"
#include "convert/text_params.h"
#include "core/status.h"
#include "gguf/gguf_writer.h"

namespace geniex::convert {

/// A tensor on its way to the file: f32 values and a PyTorch-order shape (outermost first).
struct ConvTensor {
  std::string name;             ///< GGUF name
  std::vector<uint64_t> shape;  ///< outermost first
  std::vector<float> values;
};

/// Conversion rules of one architecture family.
class ArchConverter {
 public:
  virtual ~ArchConverter() = default;
  /// general.architecture.
  [[nodiscard]] virtual std::string gguf_arch() const = 0;
  /// Hyperparameters beyond add_text_params (written right after them).
  virtual Status add_params(const HfConfig& cfg, gguf::GgufWriter& w) const = 0;
  /// The GGUF name of HF tensor `hf_name`; nullopt for tensors the converter drops.
  /// An unknown name is an error that names it.
  [[nodiscard]] virtual Result<std::optional<std::string>> map_name(
      std::string_view hf_name) const = 0;
  /// Transforms a tensor in place (e.g. the Q/K row permutation); `hf_name` is the source name.
  virtual Status transform(std::string_view hf_name, ConvTensor& t) const = 0;
  /// Tensors generated from the config (written before the checkpoint's own).
  [[nodiscard]] virtual Result<std::vector<ConvTensor>> extra_tensors() const = 0;
  /// The tokenizer metadata; by default byte-level BPE from tokenizer.json.
  virtual Status add_vocab(const VocabInputs& in, gguf::GgufWriter& w) const;
};

/// The converter for config.json's architectures[0]; kUnimplemented naming the class and
/// listing the supported ones otherwise.
Result<std::unique_ptr<ArchConverter>> make_arch_converter(const HfConfig& cfg);

/// LlamaForCausalLM / MistralForCausalLM (arch_llama.cpp).
Result<std::unique_ptr<ArchConverter>> make_llama_converter(const HfConfig& cfg);
/// Lfm2ForCausalLM ("lfm2", arch_lfm2.cpp).
Result<std::unique_ptr<ArchConverter>> make_lfm2_converter(const HfConfig& cfg);
/// Gemma3ForCausalLM ("gemma3", arch_gemma3.cpp).
Result<std::unique_ptr<ArchConverter>> make_gemma3_converter(const HfConfig& cfg);
/// Qwen2ForCausalLM ("qwen2") / Qwen3ForCausalLM ("qwen3") (arch_qwen.cpp).
Result<std::unique_ptr<ArchConverter>> make_qwen_converter(const HfConfig& cfg,
                                                           const std::string& gguf_arch);

}  // namespace geniex::convert
