// The vision side of a vision-language model, as llama.cpp's converter stores it in an "mmproj"
// GGUF (`general.architecture = clip`): the SigLIP2 (NaFlex) encoder's hyper-parameters and
// tensors, and the LFM2-VL projector (pixel unshuffle, LayerNorm, two-layer MLP) that maps its
// output into the text model's embedding space (shared/spec/LFM2.md §2-3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"

namespace geniex::models {

/// What the mmproj file declares (keys `clip.*`).
struct VisionConfig {
  std::string projector_type;  ///< clip.projector_type ("lfm2": the only one this build runs)
  uint32_t n_embd = 0;         ///< clip.vision.embedding_length (Ev)
  uint32_t n_ff = 0;           ///< clip.vision.feed_forward_length (Fv)
  uint32_t n_head = 0;         ///< clip.vision.attention.head_count
  uint32_t n_layer = 0;        ///< clip.vision.block_count: the encoder layers that run
  uint32_t patch_size = 16;    ///< clip.vision.patch_size
  uint32_t n_pos_side = 16;    ///< sqrt(rows of v.position_embd): the learned position grid
  float eps = 1e-6f;           ///< clip.vision.attention.layer_norm_epsilon
  uint32_t scale_factor = 2;   ///< clip.vision.projector.scale_factor (pixel unshuffle)
  uint32_t n_embd_text = 0;    ///< clip.vision.projection_dim: the text model's width
  float image_mean[3] = {0.5f, 0.5f, 0.5f};
  float image_std[3] = {0.5f, 0.5f, 0.5f};
  /// Projector LayerNorm epsilon: transformers' Lfm2VlMultiModalProjector uses nn.LayerNorm's
  /// default (not stored in the file).
  float projector_eps = 1e-5f;

  [[nodiscard]] uint32_t head_dim() const { return n_embd / n_head; }
};

/// One SigLIP2 encoder layer (pre-LN: x += out(MHA(ln1 x)); x += down(gelu_tanh(up(ln2 x)))).
struct VisionLayerWeights {
  const gguf::TensorInfo *ln1_w = nullptr, *ln1_b = nullptr;  ///< [Ev]
  const gguf::TensorInfo *q_w = nullptr, *q_b = nullptr;      ///< [Ev, Ev], [Ev]
  const gguf::TensorInfo *k_w = nullptr, *k_b = nullptr;
  const gguf::TensorInfo *v_w = nullptr, *v_b = nullptr;
  const gguf::TensorInfo *out_w = nullptr, *out_b = nullptr;
  const gguf::TensorInfo *ln2_w = nullptr, *ln2_b = nullptr;
  const gguf::TensorInfo *up_w = nullptr, *up_b = nullptr;      ///< [Ev, Fv], [Fv]
  const gguf::TensorInfo *down_w = nullptr, *down_b = nullptr;  ///< [Fv, Ev], [Ev]
};

struct VisionWeights {
  /// [P, P, 3, Ev]: PyTorch's conv weight [Ev, 3, P, P], so each output row is (c, ky, kx).
  const gguf::TensorInfo* patch_w = nullptr;
  const gguf::TensorInfo* patch_b = nullptr;  ///< [Ev]
  const gguf::TensorInfo* pos = nullptr;      ///< [Ev, n_pos_side^2]
  std::vector<VisionLayerWeights> layers;
  const gguf::TensorInfo *post_ln_w = nullptr, *post_ln_b = nullptr;  ///< [Ev]
  /// Projector: optional LayerNorm over 4 Ev, then [4 Ev, Hp] and [Hp, E].
  const gguf::TensorInfo *mm_norm_w = nullptr, *mm_norm_b = nullptr;
  const gguf::TensorInfo *mm1_w = nullptr, *mm1_b = nullptr;
  const gguf::TensorInfo *mm2_w = nullptr, *mm2_b = nullptr;
};

/// Reads the `clip.*` keys. kInvalidArgument for a file that is not an mmproj
/// (general.architecture != "clip"), a projector other than "lfm2", or inconsistent sizes.
Result<VisionConfig> load_vision_config(const gguf::GgufFile& file);

/// Looks up and checks every tensor (errors as bind_weights: all missing names in one message).
Result<VisionWeights> bind_vision_weights(const gguf::GgufFile& file, const VisionConfig& config);

}  // namespace geniex::models
