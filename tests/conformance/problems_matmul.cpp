// MatMul and Embedding problems for every weight type: the CPU tests' shapes (N not a multiple
// of 8, M = 1 / 7 / 70), the OpenCL tests' (K not a multiple of 256 where the block allows, odd K
// for float types, M = 37), activation rows at the quantizers' corner cases (K = 4096), 4-D
// activations, zero activations, and the real Gemma 3 270M's matmul shapes.
#include <string>

#include "conformance/problems.h"

namespace geniex::conformance {
namespace {

bool is_float(GgmlType t) { return t == kF32 || t == kF16 || t == GgmlType::kBF16; }

// `want` rounded up to a multiple of t's block size.
int64_t fit_k(GgmlType t, int64_t want) {
  const int64_t bs = static_cast<int64_t>(traits(t).block_size);
  return (want + bs - 1) / bs * bs;
}

std::string mm_name(int64_t k, int64_t n, int64_t m) {
  return "K=" + std::to_string(k) + " N=" + std::to_string(n) + " M=" + std::to_string(m);
}

void add_matmul(ProblemList& out, const Target& tg, GgmlType t, int64_t k, int64_t n, int64_t m,
                std::string name, float sigma = 1.0f, bool heavy = false) {
  auto p = std::make_unique<Problem>();
  p->heavy = heavy;
  p->name = std::move(name);
  p->seed = static_cast<uint32_t>(100 + n + 7 * m);
  if (tg.is_static()) p->tokens(m);
  const NodeId w = p->weight(t, k, n);
  const NodeId x = p->input({k, m, 1, 1}, sigma);
  p->out = p->op(OpKind::kMatMul, {w, x});
  out.push_back(std::move(p));
}

struct GemmaMatMul {
  GgmlType type;
  int64_t k, n;
  const char* what;
};
constexpr GemmaMatMul kGemmaMatMuls[] = {
    {GgmlType::kQ5_0, 640, 1024, "gemma attn_q 640->1024"},
    {GgmlType::kQ8_0, 640, 256, "gemma attn_v 640->256"},
    {GgmlType::kQ5_0, 640, 2048, "gemma ffn_up 640->2048"},
    {GgmlType::kQ4_K, 1024, 640, "gemma attn_output 1024->640"},
    {GgmlType::kQ6_K, 2048, 640, "gemma ffn_down 2048->640"},
    {GgmlType::kQ4_K, 2048, 640, "gemma ffn_down 2048->640"},
};

}  // namespace

ProblemList matmul_problems(GgmlType t, const Target& tg) {
  ProblemList out;
  // The CPU backend test's shapes (and the NPU's, at its token counts).
  for (int64_t n : {int64_t{48}, int64_t{33}, int64_t{96}}) {
    for (int64_t m : tg.tokens({1, 7, 70})) add_matmul(out, tg, t, 256, n, m, mm_name(256, n, m));
  }
  // The OpenCL test's: K not a multiple of 256 where the format allows; odd K for float types.
  const int64_t bs = static_cast<int64_t>(traits(t).block_size);
  const int64_t k = is_float(t) ? 75 : bs >= 256 ? 512 : 352;
  for (int64_t m : tg.tokens({1, 37})) add_matmul(out, tg, t, k, 45, m, mm_name(k, 45, m));
  // Zero activations give exact zeros (every backend, every type).
  {
    auto p = std::make_unique<Problem>();
    p->name = "zero activations";
    p->variant = "zeros";
    const int64_t m = tg.tokens({3}).front();
    if (tg.is_static()) p->tokens(m);
    const NodeId w = p->weight(t, fit_k(t, 64), 8);
    const NodeId x = p->values({fit_k(t, 64), m, 1, 1}, std::vector<float>(sz(fit_k(t, 64) * m)));
    p->out = p->op(OpKind::kMatMul, {w, x});
    out.push_back(std::move(p));
  }
  if (!tg.is_static()) {
    // Activation rows at the quantizers' corner cases over many blocks (K = 4096): all zeros; the
    // largest |x| first negative then positive (Q8_K takes the first); halves that round away
    // from zero (Q8_0, d = 1) but to even (Q8_K); large and tiny magnitudes.
    {
      constexpr int64_t kk = 4096, m = 6;
      auto p = std::make_unique<Problem>();
      p->name = "edge rows K=4096 M=6";
      p->seed = 9;
      const NodeId w = p->weight(t, kk, 9);
      // Q4_1 / Q5_1 dot against Q8_1, whose block sum is an f16: 1e4-sized values overflow it
      // (in every implementation); 1e2 keeps the row large there.
      const bool q8_1 = t == GgmlType::kQ4_1 || t == GgmlType::kQ5_1;
      const float big = q8_1 ? 1e2f : 1e4f;
      auto v = gaussian(sz(kk * m), 1.0f, 10);
      for (int64_t j = 0; j < kk; ++j) {
        const size_t i = sz(j);
        v[i] = 0.0f;
        v[sz(kk) + i] = (j % 32 == 3) ? -3.0f : (j % 32 == 9) ? 3.0f : v[sz(kk) + i];
        v[sz(2 * kk) + i] = (j % 32 == 0) ? 127.0f : static_cast<float>(j % 7) - 2.5f;
        v[sz(3 * kk) + i] *= big;
        v[sz(4 * kk) + i] *= 1e-6f;
      }
      const NodeId x = p->values({kk, m, 1, 1}, std::move(v));
      p->out = p->op(OpKind::kMatMul, {w, x});
      out.push_back(std::move(p));
    }
    // Activations with four dimensions.
    {
      auto p = std::make_unique<Problem>();
      p->name = "4-D activations [K, 5, 2, 3]";
      const int64_t kk = fit_k(t, 64);
      const NodeId w = p->weight(t, kk, 20);
      const NodeId x = p->input({kk, 5, 2, 3});
      p->out = p->op(OpKind::kMatMul, {w, x});
      out.push_back(std::move(p));
    }
  }
  // Gemma 3 270M's shapes for its weight types, a decode row and a prefill.
  for (const auto& gm : kGemmaMatMuls) {
    if (gm.type != t) continue;
    for (int64_t m : tg.tokens({1, kGemmaPrefillTokens})) {
      add_matmul(out, tg, t, gm.k, gm.n, m, std::string(gm.what) + " M=" + std::to_string(m), 2.0f,
                 m > 1);
    }
  }
  return out;
}

ProblemList embedding_problems(GgmlType t, const Target& tg) {
  ProblemList out;
  struct Shape {
    int64_t e, vocab;
    std::vector<int32_t> ids;
  };
  const int64_t bs = static_cast<int64_t>(traits(t).block_size);
  std::vector<Shape> shapes = {{256, 11, {3, 0, 10, 3, 7, 1, 9, 2, 2}},
                               {is_float(t) ? 37
                                : bs >= 256 ? 256
                                            : 96,
                                50,
                                {3, 0, 49, 7, 7, 21, 3}}};
  for (auto& s : shapes) {
    if (tg.is_static()) {  // as many ids as the compiled token count
      s.ids.resize(sz(tg.static_tokens.front()), 1);
    }
    auto p = std::make_unique<Problem>();
    p->name = "E=" + std::to_string(s.e) + " vocab=" + std::to_string(s.vocab) +
              " ids=" + std::to_string(s.ids.size());
    if (tg.is_static()) p->tokens(static_cast<int64_t>(s.ids.size()));
    const NodeId table = p->weight(t, s.e, s.vocab, 0.5f, "token_embd");
    const NodeId ids = p->ints(s.ids);
    p->out = p->op(OpKind::kEmbedding, {table, ids});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace geniex::conformance
