// THE tolerance table of the conformance suite: every (backend family, subject, dtype) that a
// backend runs, the metric and bound its output must meet against graph::run_reference, and why
// it is not exact where it is not. Families: "cpu" (every ISA level), "opencl", "npu_ref" (the
// reference NPU plugin), "npu_qnn" (the QNN HTP plugin). No row: the backend must answer
// kUnsupported. A row with a variant applies to the problems tagged with it (problems_*.cpp),
// overriding the plain row.
#include "conformance/tolerance.h"

#include <initializer_list>

namespace geniex::conformance {
namespace {

using T = GgmlType;

// A set of dtypes as a bit mask over GGUF type ids.
using Types = uint64_t;
constexpr Types types(std::initializer_list<T> ts) {
  Types m = 0;
  for (T t : ts) m |= Types{1} << static_cast<uint32_t>(t);
  return m;
}
constexpr Types kAny = ~Types{0};
constexpr Types kF32 = types({T::kF32});
constexpr Types kF32F16 = types({T::kF32, T::kF16});
constexpr Types kKv = types({T::kF32, T::kF16, T::kQ8_0, T::kQ4_0});
// The OpenCL backend's weight types (README "Numerics").
constexpr Types kClBlocks =
    types({T::kQ4_0, T::kQ5_0, T::kQ8_0, T::kQ4_K, T::kQ5_K, T::kQ6_K, T::kIQ4_NL});
constexpr Types kClFloats = types({T::kF16, T::kBF16});

struct Row {
  std::string_view family, subject;
  Types dtypes;
  std::string_view variant;
  Metric metric;
  double bound;
  std::string_view why;
  double min_error = 0.0;
};

constexpr auto kExact = Metric::kBitExact;
constexpr auto kMaxRel = Metric::kMaxRel;
constexpr auto kNmse = Metric::kNmse;
constexpr auto kGelu = Metric::kGeluF16;

// clang-format off
const Row kRows[] = {
  // ---- cpu: every ISA level (scalar, SSE4, AVX2, AVX-512 (VNNI); NEON, dotprod, i8mm) -------
  {"cpu", "MatMul", kAny, "", kMaxRel, 1e-5,
   "SIMD dots over activations quantized as the reference quantizes them; only float summation "
   "order differs from quant::vec_dot_ref"},
  {"cpu", "MatMul", kAny, "zeros", kExact, 0, ""},
  {"cpu", "Embedding", kAny, "", kMaxRel, 1e-6,
   "rows dequantized by the scalar reference (or unpacked from a packed copy); in practice "
   "bit-identical"},
  {"cpu", "RmsNorm", kF32F16, "", kMaxRel, 1e-6, "the reference's row kernel; in practice exact"},
  {"cpu", "LayerNorm", kF32F16, "", kMaxRel, 1e-6,
   "the reference's double sums in its order (4 rows at once) and its row kernel; in practice exact"},
  {"cpu", "GeluErf", kF32, "", kMaxRel, 1e-6,
   "the reference's double erfc per element; in practice exact"},
  {"cpu", "Rope", kF32, "", kMaxRel, 1e-6, "cos / sin tables of the reference's angles"},
  {"cpu", "Rope", kF32, "shared tables", kExact, 0,
   "one table per (positions, parameters, factors node) per run, computed as the reference does"},
  {"cpu", "Attention", types({T::kF32, T::kQ8_0, T::kQ4_0}), "", kMaxRel, 1e-5,
   "f32 dots and SIMD exp vs the reference's doubles (Q8_0 / Q4_0: both follow ggml's flash "
   "attention, q quantized to Q8_0; only summation order differs)"},
  {"cpu", "Attention", types({T::kF16}), "", kMaxRel, 3e-3,
   "q and the probabilities rounded to f16 against an f16 cache (2^-11 each), as ggml does so "
   "that greedy output tracks llama.cpp; the reference keeps them exact"},
  {"cpu", "CacheWrite", kKv, "", kExact, 0, "the same conversion (quant::quantize_row, f16 RNE)"},
  {"cpu", "Softmax", kF32, "", kMaxRel, 1e-6, "f32 exp vs double"},
  {"cpu", "Silu", kF32, "", kMaxRel, 1e-6, "SIMD sigmoid, a few ULP from ref::silu"},
  {"cpu", "Scale", kF32, "", kMaxRel, 1e-6, "one multiply; in practice exact"},
  {"cpu", "Softcap", kF32, "", kMaxRel, 1e-6, "f32 tanh vs double"},
  {"cpu", "Gelu", kF32, "", kGelu, 1.5e-3,
   "ggml's GELU: x rounded to f16, looked up in an f16 table; two 2^-11 roundings, |gelu'| < "
   "1.13, so |err| <= 2.13 * 2^-11 * |x|"},
  {"cpu", "Glu", kF32, "", kMaxRel, 1e-6, "SwiGLU: SIMD sigmoid"},
  {"cpu", "Glu", kF32, "gelu", kGelu, 1.5e-3, "GeGLU: ggml's f16 GELU table (see Gelu), times |up|"},
  {"cpu", "Add", kF32F16, "", kMaxRel, 1e-6, "one add; in practice exact"},
  {"cpu", "Mul", kF32F16, "", kMaxRel, 1e-6, "one multiply; in practice exact"},
  {"cpu", "Reshape", kF32F16, "", kMaxRel, 1e-6, "a view; in practice exact"},
  {"cpu", "GetRows", kF32, "", kMaxRel, 1e-6, "a copy; in practice exact"},
  {"cpu", "Hadamard", kF32, "", kMaxRel, 1e-6,
   "ggml's float butterflies (scale first) vs the reference's double ones, rounded once"},
  {"cpu", "ShortConv", kF32, "", kMaxRel, 1e-5,
   "ggml_ssm_conv's float sum of L products vs the reference's double (cancellation: rel to max)"},
  {"cpu", "ShortConvState", kF32, "", kExact, 0, "a copy of state / input columns"},
  {"cpu", "DecoderBlock", kF32, "", kMaxRel, 1e-3,
   "matmul and attention summation order through a block (measured ~3e-7)"},
  {"cpu", "DecoderBlock", kF32, "state", kMaxRel, 1e-5, "cached k / v: matmul summation order"},
  {"cpu", "DecoderBlock", types({T::kF16}), "", kMaxRel, 5e-2,
   "q rounded to f16 before Q.K with unscaled random weights (scores ~50): probabilities move "
   "by a few percent (measured 1.6e-2), which is ggml's behaviour"},
  {"cpu", "DecoderBlock", types({T::kF16}), "state", kMaxRel, 1e-3,
   "cached k / v: summation order plus one f16 rounding step"},
  {"cpu", "TwoLayers", types({T::kF16}), "", kNmse, 5e-4,
   "q and p rounded to f16 in attention over the f16 caches, through two layers (measured "
   "5e-5..1e-4)"},
  {"cpu", "TwoLayers", types({T::kF16}), "state", kNmse, 5e-4, "k / v from those layers"},

  // ---- opencl (PoCL in CI; bounds are NMSE, measured values printed as "[ err ]") -----------
  {"opencl", "MatMul", kF32, "", kNmse, 1e-5, "f32 work-group sums (measured ~1e-13)"},
  {"opencl", "MatMul", kClFloats, "", kNmse, 1e-5,
   "the reference rounds activations to F16 / BF16, the kernels keep them f32 (measured ~4e-8 "
   "/ ~3e-6)"},
  {"opencl", "MatMul", kClBlocks, "", kNmse, 1e-12,
   "activations quantized to Q8_0 / Q8_K and integer block sums as the reference; only the order "
   "of the per-block float terms differs (measured ~7e-15)"},
  {"opencl", "MatMul", kClBlocks | kClFloats | kF32, "zeros", kExact, 0, ""},
  {"opencl", "Embedding", kClBlocks | kClFloats | kF32, "", kExact, 0,
   "dequantized in the reference's operation order"},
  {"opencl", "RmsNorm", kF32F16, "", kNmse, 1e-5, "double sums with cl_khr_fp64 (0 on PoCL)"},
  {"opencl", "RmsNorm", kF32, "gemma", kExact, 0, "fp64 sums, the reference's order"},
  {"opencl", "Rope", kF32, "", kNmse, 1e-5, "angles in f32 on devices without fp64"},
  {"opencl", "Rope", kF32, "gemma", kExact, 0, "host-built tables of the reference's angles"},
  {"opencl", "Softmax", kF32, "", kNmse, 1e-5, "work-group sums"},
  {"opencl", "Silu", kF32, "", kNmse, 1e-5, "device exp"},
  {"opencl", "Scale", kF32, "", kNmse, 1e-5, "one multiply"},
  {"opencl", "Softcap", kF32, "", kNmse, 1e-5, "device tanh"},
  {"opencl", "Gelu", kF32, "", kNmse, 1e-5, "device tanh"},
  {"opencl", "Glu", kF32, "", kNmse, 1e-5, "device exp / tanh"},
  {"opencl", "Add", kF32F16, "", kExact, 0, "one add (F16 converted exactly on upload)"},
  {"opencl", "Mul", kF32F16, "", kExact, 0, "one multiply (F16 converted exactly on upload)"},
  {"opencl", "Reshape", kF32F16, "", kExact, 0, "a view"},
  {"opencl", "GetRows", kF32, "", kExact, 0, "a copy"},
  {"opencl", "LayerNorm", kF32F16, "", kNmse, 1e-12,
   "the reference's two passes in wide (double with fp64), sums in work-group order"},
  {"opencl", "GeluErf", kF32, "", kNmse, 1e-12,
   "the reference's 0.5 x erfc(-x / sqrt 2) in wide; bit-identical where the device's erfc is"},
  {"opencl", "Hadamard", kF32, "", kNmse, 1e-12,
   "the CPU's float butterflies, one work-item per block (no contraction: the CPU's bits)"},
  {"opencl", "ShortConv", kF32, "", kNmse, 1e-12,
   "the reference's products and tap-order sum in wide (double with fp64: its bits; measured 0)"},
  {"opencl", "ShortConvState", kF32, "", kExact, 0, "a copy of state / input columns"},
  {"opencl", "Attention", kF32F16, "", kNmse, 1e-5,
   "F16: q and p rounded to f16 as the CPU backend / llama.cpp (measured ~8e-8)"},
  {"opencl", "Attention", types({T::kQ8_0, T::kQ4_0}), "", kNmse, 1e-12,
   "q quantized to Q8_0 and block dots as the reference; the online softmax order differs"},
  {"opencl", "CacheWrite", kKv, "", kExact, 0, "F16 RNE on the device, Q8_0 / Q4_0 on the host"},
  {"opencl", "TwoLayers", types({T::kF16}), "", kNmse, 5e-4,
   "q and p rounded to f16 over the f16 caches as the CPU backend (measured 5e-5..1e-4)"},
  {"opencl", "TwoLayers", types({T::kF16}), "state", kNmse, 5e-4, "k / v from those layers"},

  // ---- npu_ref: the reference NPU plugin (static shapes T = 1 and 128, int8 matmuls) --------
  {"npu_ref", "MatMul", kAny, "", kNmse, 1e-3,
   "int8 weights per output row and int8 activations per token, int32 sums (measured ~1e-4); "
   "it must differ from the reference a little (it really runs int8)", 1e-12},
  {"npu_ref", "MatMul", kAny, "zeros", kExact, 0, ""},
  {"npu_ref", "RmsNorm", kF32F16, "", kMaxRel, 1e-6, "f32 storage, the scalar reference ops"},
  {"npu_ref", "Rope", kF32, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "Attention", kF32F16, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "CacheWrite", kF32F16, "", kExact, 0, "rounds as the reference (f16 RNE)"},
  {"npu_ref", "Softmax", kF32, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "Silu", kF32, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "Scale", kF32, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "Gelu", kF32, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "Glu", kF32, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "Add", kF32F16, "", kMaxRel, 1e-6, "the scalar reference ops (F16 weights dequantized at compile)"},
  {"npu_ref", "Mul", kF32F16, "", kMaxRel, 1e-6, "the scalar reference ops (F16 weights dequantized at compile)"},
  {"npu_ref", "Reshape", kF32F16, "", kMaxRel, 1e-6, "the scalar reference ops (F16 weights dequantized at compile)"},
  {"npu_ref", "GetRows", kF32, "", kMaxRel, 1e-6, "the scalar reference ops"},
  {"npu_ref", "TwoLayers", types({T::kF16}), "", kNmse, 1e-3,
   "int8 matmuls through two layers (measured ~3e-4)"},
  {"npu_ref", "TwoLayers", types({T::kF16}), "state", kNmse, 1e-3, "k / v from int8 matmuls"},
  // ---- npu_qnn: Qualcomm's HTP through the QNN plugin (x86-64: QAIRT's emulation), static
  // T = 1 and 128, F32 at the boundary and fp16 inside (activations, F32 / F16 weights) --------
  {"npu_qnn", "MatMul", kF32F16, "", kNmse, 1e-6,
   "fp16 activations and weights (measured <= 1.6e-7 with F32 weights, 5.3e-8 with F16)"},
  {"npu_qnn", "MatMul", kF32F16, "zeros", kExact, 0, "zero activations give exact zeros"},
  {"npu_qnn", "RmsNorm", kF32F16, "", kMaxRel, 2e-3, "fp16 in, out and scale (measured <= 6.2e-4)"},
  {"npu_qnn", "Add", kF32F16, "", kMaxRel, 2e-3,
   "fp16 operands and sum, each off by up to half an fp16 ulp (measured <= 6.0e-4)"},
  {"npu_qnn", "Mul", kF32F16, "", kMaxRel, 2e-3, "fp16 operands and product (measured <= 5.9e-4)"},
  {"npu_qnn", "MatMul", types({T::kBF16}), "", kNmse, 1e-5,
   "BF16 weights widened at compile, fp16 on the HTP (measured <= 3.0e-6)"},
  {"npu_qnn", "MatMul", ~types({T::kF32, T::kF16, T::kBF16}), "", kNmse, 5e-4,
   "block weights dequantized at compile, fp16 on the HTP; the reference rounds activations to "
   "Q8_0 / Q8_1 / Q8_K, the HTP keeps them in fp16: most of the difference is the reference's "
   "own rounding (measured <= 1.4e-4, IQ4_XS)"},
  {"npu_qnn", "MatMul", ~kF32F16, "zeros", kExact, 0, "zero activations give exact zeros"},
  {"npu_qnn", "Embedding", ~kF32F16, "", kNmse, 1e-6,
   "rows dequantized at compile, held in fp16 (measured <= 6.4e-8)"},
  {"npu_qnn", "Embedding", kF32F16, "", kNmse, 1e-6,
   "Gather of a static table held in fp16 (measured <= 5.9e-8 from F32, ~1e-14 from F16)"},
  {"npu_qnn", "TwoLayers", types({T::kF16}), "", kNmse, 1e-3,
   "two whole layers on the HTP in fp16 over F16 caches, Q4_0 weights dequantized at compile, the "
   "reference's activations rounded to Q8_0 (measured 9.4e-5 prefill, 1.5e-4 decode)"},
  {"npu_qnn", "TwoLayers", types({T::kF16}), "state", kNmse, 1e-3,
   "k / v those layers wrote through CacheWrite (host scatter, RNE)"},
  {"npu_qnn", "Rope", kF32, "", kNmse, 1e-6,
   "x * cos + rot(x) * sin in fp16; cos / sin from the host in double (measured <= 1.5e-7)"},
  {"npu_qnn", "Attention", kF32F16, "", kNmse, 1e-4,
   "fp16 q.k, softmax and p.v; host-built mask and gathered rows (measured <= 2.9e-6, "
   "1.3e-5 on Gemma 3's d = 256 decode)"},
  {"npu_qnn", "CacheWrite", kF32F16, "", kExact, 0,
   "the host writes the rows, rounding to F16 as the reference (RNE)"},
  {"npu_qnn", "Softmax", kF32, "", kNmse, 1e-5, "fp16 Softmax with beta = scale (measured <= 2.1e-6)"},
  {"npu_qnn", "Silu", kF32, "", kNmse, 1e-6, "x * Sigmoid(x) in fp16 (measured <= 3.8e-7)"},
  {"npu_qnn", "Scale", kF32, "", kNmse, 1e-6, "fp16 multiply (measured <= 1.8e-7)"},
  {"npu_qnn", "Softcap", kF32, "", kNmse, 1e-6, "cap * Tanh(x / cap) in fp16 (measured <= 2e-7)"},
  {"npu_qnn", "Gelu", kF32, "", kNmse, 1e-6, "the tanh form from Tanh and multiplies in fp16 (measured <= 2.5e-7)"},
  {"npu_qnn", "Glu", kF32, "", kNmse, 2e-6, "SiLU(gate) * up in fp16 (measured <= 3.5e-7)"},
  {"npu_qnn", "Glu", kF32, "gelu", kNmse, 2e-6, "GELU-tanh(gate) * up in fp16 (measured <= 5.4e-7)"},
  {"npu_qnn", "Reshape", kF32F16, "", kNmse, 1e-6, "values pass through fp16 (measured <= 8.8e-8)"},
  {"npu_qnn", "GetRows", kF32, "", kNmse, 1e-6, "Gather; values pass through fp16 (measured <= 3.9e-8)"},
};
// clang-format on

const Row* find_row(std::string_view family, std::string_view subject, GgmlType dtype,
                    std::string_view variant) {
  const uint32_t id = static_cast<uint32_t>(dtype);
  for (const Row& r : kRows) {
    if (r.family == family && r.subject == subject && r.variant == variant && id < 64 &&
        (r.dtypes >> id & 1) != 0) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::kBitExact: return "bit-exact";
    case Metric::kMaxRel: return "max-rel";
    case Metric::kNmse: return "nmse";
    case Metric::kGeluF16: return "gelu-f16";
  }
  return "?";
}

std::optional<Tolerance> find_tolerance(std::string_view family, std::string_view subject,
                                        GgmlType dtype, std::string_view variant) {
  const Row* r = find_row(family, subject, dtype, variant);
  if (r == nullptr && !variant.empty()) r = find_row(family, subject, dtype, {});
  if (r == nullptr) return std::nullopt;
  return Tolerance{r->metric, r->bound, r->min_error, r->why};
}

}  // namespace geniex::conformance
