// The pieces of a SentencePiece model file (tokenizer.model, a serialized ModelProto): text,
// score and type of each piece, read with a small bounds-checked protobuf reader of our own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace geniex::convert {

/// SentencePiece piece types (sentencepiece_model.proto, SentencePiece.Type).
enum class SpmType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

/// One piece of the model, in id order.
struct SpmPiece {
  std::string text;
  float score = 0.0f;
  SpmType type = SpmType::kNormal;
};

/// Parses ModelProto bytes: the repeated `pieces` field (1) with piece (1), score (2) and type
/// (3); everything else (trainer and normalizer specs) is skipped. Malformed input (truncated
/// varints or lengths, unknown wire types, an unknown piece type) is kDataLoss.
Result<std::vector<SpmPiece>> parse_spm_model(std::span<const uint8_t> bytes);

}  // namespace geniex::convert
