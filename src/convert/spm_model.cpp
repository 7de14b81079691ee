#include "convert/spm_model.h"

#include <cstring>

namespace geniex::convert {
namespace {

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  bool done() const { return pos_ >= b_.size(); }

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= b_.size()) return false;
      const uint8_t c = b_[pos_++];
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  }
  bool bytes(std::span<const uint8_t>& out) {
    uint64_t n = 0;
    if (!varint(n) || n > b_.size() - pos_) return false;
    out = b_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool fixed32(uint32_t& v) {
    if (b_.size() - pos_ < 4) return false;
    std::memcpy(&v, b_.data() + pos_, 4);
    pos_ += 4;
    return true;
  }
  bool skip(uint32_t wire) {
    uint64_t v = 0;
    std::span<const uint8_t> s;
    uint32_t f = 0;
    switch (wire) {
      case 0: return varint(v);
      case 1:
        if (b_.size() - pos_ < 8) return false;
        pos_ += 8;
        return true;
      case 2: return bytes(s);
      case 5: return fixed32(f);
      default: return false;
    }
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

Status bad(const std::string& what) { return data_loss("tokenizer.model: " + what); }

Result<SpmPiece> parse_piece(std::span<const uint8_t> b) {
  SpmPiece p;
  Reader r(b);
  while (!r.done()) {
    uint64_t key = 0;
    if (!r.varint(key)) return bad("truncated piece");
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == 2) {
      std::span<const uint8_t> s;
      if (!r.bytes(s)) return bad("truncated piece text");
      p.text.assign(s.begin(), s.end());
    } else if (field == 2 && wire == 5) {
      uint32_t bits = 0;
      if (!r.fixed32(bits)) return bad("truncated piece score");
      std::memcpy(&p.score, &bits, 4);
    } else if (field == 3 && wire == 0) {
      uint64_t t = 0;
      if (!r.varint(t)) return bad("truncated piece type");
      if (t < 1 || t > 6) return bad("unknown piece type " + std::to_string(t));
      p.type = static_cast<SpmType>(t);
    } else if (!r.skip(wire)) {
      return bad("malformed field in a piece");
    }
  }
  return p;
}

}  // namespace

Result<std::vector<SpmPiece>> parse_spm_model(std::span<const uint8_t> bytes) {
  std::vector<SpmPiece> pieces;
  Reader r(bytes);
  while (!r.done()) {
    uint64_t key = 0;
    if (!r.varint(key)) return bad("truncated field key");
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == 2) {
      std::span<const uint8_t> s;
      if (!r.bytes(s)) return bad("truncated piece");
      GENIEX_ASSIGN_OR_RETURN(SpmPiece p, parse_piece(s));
      pieces.push_back(std::move(p));
    } else if (!r.skip(wire)) {
      return bad("malformed field");
    }
  }
  if (pieces.empty()) return bad("no pieces");
  return pieces;
}

}  // namespace geniex::convert
