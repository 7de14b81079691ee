// The tokenizer of a Hugging Face checkpoint as GGUF metadata (tokenizer.ggml.*), written the
// way llama.cpp's convert_hf_to_gguf.py writes it: byte-level BPE from tokenizer.json ("gpt2"
// model) or SentencePiece from tokenizer.model ("llama" model), special token ids and add_*_token
// flags from tokenizer_config.json / config.json and the post-processor, and the chat template.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "gguf/gguf_writer.h"

namespace geniex::convert {

/// What the vocabulary step needs from the caller.
struct VocabInputs {
  std::string dir;                         ///< the checkpoint directory
  const nlohmann::json* config = nullptr;  ///< its config.json
  uint32_t vocab_size = 0;                 ///< config vocab_size: ids [0, vocab_size) are written
  std::string tokenizer_pre;  ///< BPE pre-tokenizer name; empty = detect from tokenizer.json
};

/// The BPE pre-tokenizer name llama.cpp uses for this tokenizer.json's pre_tokenizer
/// ("llama-bpe", "qwen2", ...). llama.cpp identifies it by hashing the token ids of a check
/// string; we match the split regex instead, which needs no tokenizer run and also works for
/// truncated vocabularies. kUnimplemented for a pre-tokenizer we do not know.
Result<std::string> detect_bpe_pre(const nlohmann::json& tokenizer_json);

/// Writes tokenizer.ggml.* and tokenizer.chat_template for a byte-level BPE tokenizer.json.
Status add_bpe_vocab(const VocabInputs& in, gguf::GgufWriter& w);

/// Writes tokenizer.ggml.* ("llama" model: tokens, scores, types) from a SentencePiece
/// tokenizer.model, with added_tokens.json / tokenizer_config.json overrides, as llama.cpp's
/// _set_vocab_sentencepiece does (ids from config vocab_size; unset ones are "[PADi]").
Status add_spm_vocab(const VocabInputs& in, gguf::GgufWriter& w);

}  // namespace geniex::convert
