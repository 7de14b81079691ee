// Forward graph vs Hugging Face transformers logits on the tiny random-weight models
// (tests/data/models/README.md), plus the .npy reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "models/forward_graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"
#include "models/npy.h"
#include "models/test_util.h"

namespace geniex::models {
namespace {

using test::source_dir;
using test::tiny_path;

constexpr int kPos = 64;
constexpr int kVocab = 2048;

std::string data_dir() { return source_dir() + "/tests/data/models"; }

const nlohmann::json& tiny_models() {
  static const nlohmann::json j = [] {
    std::ifstream in(data_dir() + "/tiny_models.json");
    EXPECT_TRUE(in.good()) << "tiny_models.json";
    return nlohmann::json::parse(in);
  }();
  return j;
}

size_t argmax(const float* row, size_t n) {
  return static_cast<size_t>(std::max_element(row, row + n) - row);
}

float top2_margin(const float* row, size_t n) {
  float a = -INFINITY, b = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (row[i] > a) {
      b = a;
      a = row[i];
    } else if (row[i] > b) {
      b = row[i];
    }
  }
  return a - b;
}

struct Case {
  std::string arch;
  std::string type;
};

class ForwardVsHf : public ::testing::TestWithParam<Case> {};

TEST_P(ForwardVsHf, LogitsMatchTransformers) {
  const Case& c = GetParam();
  auto file = gguf::GgufFile::open(tiny_path(c.arch, c.type));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto ref = read_npy(data_dir() + "/tiny-" + c.arch + ".logits.npy");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  ASSERT_EQ(ref->shape, (std::vector<int64_t>{kPos, kVocab}));
  const auto& model = tiny_models().at("models").at(c.arch);
  const auto ids = model.at("ids").get<std::vector<int32_t>>();
  const auto& lcpp = model.at("llama_cpp_vs_hf").at(c.type);
  const auto lcpp_top1 = lcpp.at("top1").get<std::vector<size_t>>();
  const int lcpp_agree = lcpp.at("top1_agree").get<int>();
  const double lcpp_max_err = lcpp.at("max_abs_diff").get<double>();
  ASSERT_EQ(lcpp_top1.size(), static_cast<size_t>(kPos));
  ASSERT_EQ(ids.size(), static_cast<size_t>(kPos));

  auto got = run_forward_reference(*file, ids);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), ref->data.size());

  const float* hf = ref->data.data();
  const float* ours = got->data();
  double max_err = 0.0;
  float lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < got->size(); ++i) {
    ASSERT_TRUE(std::isfinite(ours[i])) << "logit " << i;
    max_err = std::max(max_err, std::fabs(static_cast<double>(ours[i]) - hf[i]));
    lo = std::min(lo, hf[i]);
    hi = std::max(hi, hf[i]);
  }
  int agree = 0;
  int agree_lcpp = 0;
  // Misses where HF's own top-2 gap is < 0.25 or where llama.cpp picks the same token as we do
  // (lfm2 Q8_0: ggml's activation rounding through two multiplicative gates per conv layer moves
  // top-1s at gaps up to 0.62 in llama.cpp too).
  int small_margin_misses = 0;
  std::string misses;
  for (int p = 0; p < kPos; ++p) {
    const float* h = hf + static_cast<size_t>(p) * kVocab;
    const float* o = ours + static_cast<size_t>(p) * kVocab;
    if (argmax(o, kVocab) == lcpp_top1[static_cast<size_t>(p)]) ++agree_lcpp;
    if (argmax(h, kVocab) == argmax(o, kVocab)) {
      ++agree;
      continue;
    }
    const float margin = top2_margin(h, kVocab);
    if (margin < 0.25f || argmax(o, kVocab) == lcpp_top1[static_cast<size_t>(p)]) {
      ++small_margin_misses;
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), " pos %d (HF margin %.3f)", p, margin);
    misses += buf;
  }
  std::printf(
      "[forward] %-7s %-5s max_abs_err %.3g (llama.cpp %.3g; HF range %.2f)  top1 vs HF %d/%d "
      "(llama.cpp %d/%d), vs llama.cpp %d/%d%s\n",
      c.arch.c_str(), c.type.c_str(), max_err, lcpp_max_err, static_cast<double>(hi - lo), agree,
      kPos, lcpp_agree, kPos, agree_lcpp, kPos, misses.c_str());

  // The reference ops follow ggml (activations rounded to the weight's vec_dot type), so the
  // argmax tracks llama.cpp's; gemma3 may differ once (llama.cpp's GELU uses an fp16 table).
  EXPECT_GE(agree_lcpp, kPos - 1) << "top-1 vs llama.cpp";
  if (c.type == "f32") {
    EXPECT_LE(max_err, 1e-3 * (hi - lo));
    EXPECT_LE(max_err, 1e-4);  // README: f32-GELU engines should match HF at ~1e-4
    EXPECT_EQ(agree, kPos) << misses;
  } else if (c.type == "f16") {
    // ≥ 99% of 64: at most one miss, and only where HF's own top-2 gap is < 0.25 (or llama.cpp
    // misses the same way).
    EXPECT_GE(agree, kPos - 1) << misses;
    EXPECT_EQ(agree + small_margin_misses, kPos) << misses;
    EXPECT_LE(max_err, 2.0 * lcpp_max_err);
  } else {
    // Q8_0 (activations quantized to Q8_0 as ggml does) loses top-1s where HF's top-2 gap is
    // tiny; llama.cpp itself agrees with HF on only 59–63 of 64 positions for these files
    // (README table; lfm2 57). Require: every miss at an HF gap < 0.25 or shared with llama.cpp,
    // no more misses than llama.cpp, and an error of llama.cpp's order.
    EXPECT_EQ(agree + small_margin_misses, kPos) << misses;
    EXPECT_GE(agree, std::min(lcpp_agree, kPos - 1)) << misses;
    EXPECT_LE(max_err, 2.0 * lcpp_max_err);
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* arch : {"llama", "mistral", "qwen2", "qwen3", "gemma3", "lfm2"}) {
    for (const char* type : {"f32", "f16", "q8_0"}) cases.push_back({arch, type});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Tiny, ForwardVsHf, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return p.param.arch + "_" + p.param.type;
                         });

TEST(ForwardGraph, SharesTiedEmbeddingNodeAndShapesLogits) {
  auto file = gguf::GgufFile::open(tiny_path("qwen2", "f32"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto cfg = load_config(*file);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  auto w = bind_weights(*file, *cfg);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_TRUE(w->tied_embeddings);
  auto fg = build_forward_graph(*cfg, *w, 5);
  ASSERT_TRUE(fg.ok()) << fg.status().to_string();
  EXPECT_EQ(fg->weights.size(), w->n_bound);
  const auto& out = fg->graph.node(fg->logits).desc;
  EXPECT_EQ(out.ne, (std::array<int64_t, 4>{kVocab, 5, 1, 1}));
}

TEST(ForwardGraph, RejectsBadInputs) {
  auto file = gguf::GgufFile::open(tiny_path("llama", "f32"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto cfg = load_config(*file);
  ASSERT_TRUE(cfg.ok());
  auto w = bind_weights(*file, *cfg);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(build_forward_graph(*cfg, *w, 0).status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> empty;
  EXPECT_EQ(run_forward_reference(*file, empty).status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> bad = {1, kVocab};
  EXPECT_EQ(run_forward_reference(*file, bad).status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> neg = {-1};
  EXPECT_EQ(run_forward_reference(*file, neg).status().code(), StatusCode::kInvalidArgument);
}

// llama.cpp's rule for the rotation around a quantized cache: K by the largest power of two
// dividing the head (at least 64), V by 64; only for quantized caches and head sizes that are
// multiples of 64.
TEST(ForwardGraph, KvRotationFollowsLlamaCppRule) {
  ModelConfig c;
  auto rot = [&](uint32_t dk, uint32_t dv, GgmlType t) {
    c.head_dim_k = dk;
    c.head_dim_v = dv;
    const KvRotation r = kv_rotation(c, t);
    return std::pair<int32_t, int32_t>{r.k, r.v};
  };
  using P = std::pair<int32_t, int32_t>;
  EXPECT_EQ(rot(256, 256, GgmlType::kQ4_0), (P{256, 64}));  // Gemma 3
  EXPECT_EQ(rot(128, 128, GgmlType::kQ8_0), (P{128, 64}));  // Llama 3, Qwen
  EXPECT_EQ(rot(64, 64, GgmlType::kQ8_0), (P{64, 64}));
  EXPECT_EQ(rot(192, 128, GgmlType::kQ4_0), (P{64, 64}));  // 192 = 3 * 64
  EXPECT_EQ(rot(80, 80, GgmlType::kQ8_0), (P{0, 0}));      // not a multiple of 64
  EXPECT_EQ(rot(256, 256, GgmlType::kF16), (P{0, 0}));     // unquantized caches: none
  EXPECT_EQ(rot(256, 256, GgmlType::kF32), (P{0, 0}));
}

// The rotation changes nothing in exact arithmetic: Q and K rotated alike keep Q.K, V rotated
// before the cache and the output rotated back keep the weighted sum. Through a whole model with
// F32 caches (so only float rounding differs), the logits agree to ~1e-5; and the graph really
// rotates (Hadamard nodes: q, k, v and the output per layer).
TEST(ForwardGraph, KvRotationKeepsTheLogits) {
  auto file = gguf::GgufFile::open(tiny_path("llama", "f32"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto cfg = load_config(*file);
  ASSERT_TRUE(cfg.ok());
  auto w = bind_weights(*file, *cfg);
  ASSERT_TRUE(w.ok());
  const int32_t T = 7;
  auto run = [&](std::optional<KvRotation> rot, size_t* n_hadamard) {
    ForwardSpec spec;
    spec.n_tokens = T;
    spec.kv_type = GgmlType::kF32;
    spec.kv_rotation = rot;
    spec.kv_list.assign(cfg->n_layer, T);
    spec.kv_state_rows.assign(cfg->n_layer, T);
    auto fg = build_forward_graph(*cfg, *w, spec);
    EXPECT_TRUE(fg.ok()) << fg.status().to_string();
    *n_hadamard = 0;
    for (graph::NodeId id = 0; id < fg->graph.size(); ++id) {
      const auto& n = fg->graph.node(id);
      if (n.role == graph::NodeRole::kOp && n.op == graph::OpKind::kHadamard) ++*n_hadamard;
    }
    std::vector<int32_t> ids(T), pos(T);
    for (int32_t i = 0; i < T; ++i) {
      ids[static_cast<size_t>(i)] = (i * 37 + 5) % kVocab;
      pos[static_cast<size_t>(i)] = i;
    }
    graph::Bindings b;
    b.bind_input(fg->token_ids, std::span<const int32_t>(ids));
    b.bind_input(fg->positions, std::span<const int32_t>(pos));
    std::vector<std::vector<uint8_t>> states;
    for (uint32_t il = 0; il < cfg->n_layer; ++il) {
      for (graph::NodeId id : {fg->kv_slots[il], fg->kv_rows[il], fg->kv_pos[il]}) {
        b.bind_input(id, std::span<const int32_t>(pos));
      }
      for (graph::NodeId st : {fg->k_cache[il], fg->v_cache[il]}) {
        states.emplace_back(static_cast<size_t>(fg->graph.node(st).desc.nelements()) * 4);
        b.bind_state(st, GgmlType::kF32, states.back());
      }
    }
    bind_forward_weights(*fg, b);
    std::vector<float> logits(static_cast<size_t>(T) * cfg->n_vocab);
    b.bind_output(fg->logits, std::span<float>(logits));
    const Status s = graph::run_reference(fg->graph, b);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return logits;
  };
  size_t plain_nodes = 0, rotated_nodes = 0;
  const auto plain = run(std::nullopt, &plain_nodes);  // F32 cache: no rotation by the rule
  const int32_t dk = static_cast<int32_t>(cfg->head_dim_k);
  const auto rotated = run(KvRotation{dk, dk / 2}, &rotated_nodes);
  EXPECT_EQ(plain_nodes, 0u);
  EXPECT_EQ(rotated_nodes, 4u * cfg->n_layer);
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < plain.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(plain[i]) - rotated[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(plain[i])));
  }
  EXPECT_LT(worst, 1e-5 * scale) << "max |diff| " << worst << " of max |logit| " << scale;
  EXPECT_GT(scale, 0.0);
  // A rotation that does not divide the head is a clear error, not a wrong graph.
  ForwardSpec bad;
  bad.n_tokens = 1;
  bad.kv_list.assign(cfg->n_layer, 1);
  bad.kv_state_rows.assign(cfg->n_layer, 1);
  bad.kv_rotation = KvRotation{dk * 2, 0};
  EXPECT_EQ(build_forward_graph(*cfg, *w, bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(ForwardNpy, ParsesHeaderAndRejectsOtherTypes) {
  auto make = [](const std::string& dict, size_t n_floats) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string s = "\x93NUMPY";
    s += '\x01';
    s += '\x00';
    s += static_cast<char>(header.size() & 0xff);
    s += static_cast<char>(header.size() >> 8);
    s += header;
    for (size_t i = 0; i < n_floats; ++i) {
      const float f = static_cast<float>(i) + 0.5f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      for (int k = 0; k < 4; ++k) s += static_cast<char>((u >> (8 * k)) & 0xff);
    }
    std::vector<uint8_t> b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
  };
  auto ok = parse_npy(make("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 6));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ok->data[5], 5.5f);
  auto vec = parse_npy(make("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 4));
  ASSERT_TRUE(vec.ok()) << vec.status().to_string();
  EXPECT_EQ(vec->shape, (std::vector<int64_t>{4}));
  EXPECT_FALSE(
      parse_npy(make("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 4)).ok());
  EXPECT_FALSE(parse_npy(make("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 2)).ok());
  EXPECT_EQ(parse_npy(make("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 2))
                .status()
                .code(),
            StatusCode::kDataLoss);
  const std::vector<uint8_t> junk = {1, 2, 3};
  EXPECT_EQ(parse_npy(junk).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace geniex::models
