// The hyperparameters every decoder-only text model writes (llama.cpp's
// TextModel.set_gguf_parameters): block count, context, widths, heads, RoPE base and scaling,
// norm epsilons, head dims, file type — read from config.json under the same key aliases.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "gguf/gguf_writer.h"

namespace geniex::convert {

/// A checkpoint's config.json, with a multimodal "text_config" lifted to the root, and its
/// RoPE parameters gathered the way llama.cpp's converter gathers them.
struct HfConfig {
  nlohmann::json params;  ///< the (merged) hyperparameters
  nlohmann::json rope;    ///< rope_parameters / rope_scaling, with rope_theta etc. mirrored in
  std::string
      hf_arch;  ///< the text model's class: text_config.architectures[0], else architectures[0]
  std::string top_arch;  ///< architectures[0] (the multimodal wrapper's class, if any)
  std::string path;      ///< for error messages

  /// The first of `keys` present (nullptr when none is, or its value is null).
  [[nodiscard]] const nlohmann::json* find(std::initializer_list<const char*> keys) const;
  /// A required non-negative integer under one of `keys`; the error names the keys.
  [[nodiscard]] Result<uint64_t> require_uint(std::initializer_list<const char*> keys) const;
  /// The RoPE parameters of full attention (rope["full_attention"] if present, else rope).
  [[nodiscard]] const nlohmann::json& full_attention_rope() const;
};

/// Reads and checks `dir`/config.json (it must name its architecture).
Result<HfConfig> load_hf_config(const std::string& dir);

/// Writes "<arch>.block_count" ... "general.file_type" in llama.cpp's order.
Status add_text_params(const HfConfig& cfg, const std::string& arch, uint32_t block_count,
                       uint32_t file_type, gguf::GgufWriter& w);

}  // namespace geniex::convert
