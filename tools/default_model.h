// Where a subcommand finds its model when the user names none. Both defaults live in the model
// cache folder (model_cache.h: `${XDG_CACHE_HOME:-$HOME/.cache}/geniex/models`), where
// scripts/setup.sh and `geniex pull` put them; $GENIEX_MODEL overrides both.
#pragma once

#include <string>

#include "core/status.h"

namespace geniex::cli {

/// The base-model default (Gemma 3 270M Q4_K_M, no chat template of its own): raw completion
/// (`run --raw`), bench, perplexity. `geniex pull gemma3-270m` fetches it.
inline constexpr const char* kDefaultModelFile = "gemma-3-270m-q4_k_m.gguf";

/// The chat default (SmolLM2 135M Instruct Q4_1, llama architecture, with its own chat
/// template): `chat` and `run` without --raw. `geniex pull smollm2` fetches it.
inline constexpr const char* kDefaultChatModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// $GENIEX_MODEL if set, else <model cache>/gemma-3-270m-q4_k_m.gguf. NOT_FOUND (with a hint to
/// run `geniex pull gemma3-270m` or scripts/setup.sh) when that file does not exist.
Result<std::string> default_model_path();

/// The model for chat when none is given: $GENIEX_MODEL if set, else
/// <model cache>/SmolLM2-135M-Instruct.Q4_1.gguf. There is no silent fall-back to the base
/// model (it babbles in chat): when the file is missing this is NOT_FOUND with a hint to run
/// `geniex pull smollm2` or scripts/setup.sh, or to pass a model file.
Result<std::string> default_chat_model_path();

}  // namespace geniex::cli
