// Element-wise ops, one work-item per element; the global size is rounded up to whole
// work-groups (a prime element count must not force work-groups of one), so each kernel checks
// its index against n. Unary op codes: 0 GELU (tanh), 1 SiLU, 2 scale,
// 3 softcap (p * tanh(x / p)), 4 exact GELU (erf).

// As graph/ref_ops.cpp: in wide (double with fp64), rounded once to float.
inline float gelu_tanh(float x) {
  const wide v = x;
  const wide k = sqrt((wide)2.0 / (wide)3.14159265358979323846);
  return (float)((wide)0.5 * v * ((wide)1.0 + tanh(k * (v + (wide)0.044715 * v * v * v))));
}

// GELU as ggml's CPU path and our CPU backend compute it (backends/cpu/op_activation.cpp), so
// placements agree: x in (-10, 10) rounded to f16, the tanh approximation in float, the result
// rounded to f16; 0 below -10, x above 10. The exact form above stays for reference tests.
inline float gelu_f16(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  ushort bits;  // storage for one half (a half variable itself needs cl_khr_fp16)
  vstore_half_rte(x, 0, (half*)&bits);
  const float v = vload_half(0, (const half*)&bits);
  const float g = 0.5f * v * (1.0f + tanh(0.7978845608028654f * v * (1.0f + 0.044715f * v * v)));
  vstore_half_rte(g, 0, (half*)&bits);
  return vload_half(0, (const half*)&bits);
}

// Exact GELU as graph/ref_ops.cpp: 0.5 x erfc(-x / sqrt(2)) in wide, rounded once.
inline float gelu_erf(float x) {
  const wide v = x;
  return (float)((wide)0.5 * v * erfc(-v / sqrt((wide)2.0)));
}

inline float silu(float x) {
  const wide v = x;
  return (float)(v / ((wide)1.0 + exp(-v)));
}

kernel void unary_f32(global const float* x, global float* y, int op, float p, ulong n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float v = x[i];
  float r;
  switch (op) {
    case 0: r = gelu_f16(v); break;
    case 1: r = silu(v); break;
    case 2: r = v * p; break;
    case 4: r = gelu_erf(v); break;
    default: r = (float)((wide)p * tanh((wide)v / (wide)p)); break;
  }
  y[i] = r;
}

// act(gate) * up; act 0: SiLU, 1: GELU-tanh.
kernel void glu_f32(global const float* gate, global const float* up, global float* y, int act,
                    ulong n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float g = gate[i];
  y[i] = (act == 0 ? silu(g) : gelu_f16(g)) * up[i];
}

// y = a (+|*) b with b broadcast along dims where its extent is 1; one work-item per element of
// a. a_ne / b_ne: the four extents.
kernel void binary_f32(global const float* a, global const float* b, global float* y, int mul,
                       int4 a_ne, int4 b_ne, ulong n) {
  const size_t idx = get_global_id(0);
  if (idx >= n) return;
  size_t r = idx;
  const int i0 = (int)(r % (size_t)a_ne.x);
  r /= (size_t)a_ne.x;
  const int i1 = (int)(r % (size_t)a_ne.y);
  r /= (size_t)a_ne.y;
  const int i2 = (int)(r % (size_t)a_ne.z);
  const int i3 = (int)(r / (size_t)a_ne.z);
  const size_t j = ((((size_t)(i3 % b_ne.w) * b_ne.z + (size_t)(i2 % b_ne.z)) * b_ne.y +
                     (size_t)(i1 % b_ne.y)) * b_ne.x) + (size_t)(i0 % b_ne.x);
  y[idx] = mul ? a[idx] * b[j] : a[idx] + b[j];
}

// y[r, :] = x[idx[r], :] (indices checked on the host).
kernel void get_rows_f32(global const float* x, global const int* idx, global float* y, int E) {
  const int i = get_global_id(0), r = get_global_id(1);
  y[(size_t)r * E + i] = x[(size_t)idx[r] * E + i];
}

// Writes src token t (row_elems floats) into state row slots[t], as F32 or F16 (round to
// nearest even, like the host's fp32_to_fp16).
kernel void cache_write(global const float* src, global uchar* state, global const int* slots,
                        int row_elems, int f16) {
  const int i = get_global_id(0), t = get_global_id(1);
  const float v = src[(size_t)t * row_elems + i];
  const size_t at = (size_t)slots[t] * row_elems + i;
  if (f16) {
    vstore_half_rte(v, at, (global half*)state);
  } else {
    ((global float*)state)[at] = v;
  }
}

// Walsh-Hadamard rotation of n-element blocks (n a power of two), one work-item per block, in
// the CPU backend's (and ggml's) float order: scale by 1 / sqrt(n), then the butterfly passes
// (u + v, u - v) with the pair distance doubling. Each product and sum is its own statement, so
// nothing is contracted into an fma and the bits equal the CPU's.
kernel void hadamard_f32(global const float* x, global float* y, int n, float scale,
                         ulong blocks) {
  const size_t b = get_global_id(0);
  if (b >= blocks) return;
  global const float* xb = x + b * (size_t)n;
  global float* yb = y + b * (size_t)n;
  for (int j = 0; j < n; ++j) yb[j] = xb[j] * scale;
  for (int len = 1; len < n; len <<= 1) {
    for (int i = 0; i < n; i += 2 * len) {
      for (int j = i; j < i + len; ++j) {
        const float u = yb[j];
        const float v = yb[j + len];
        yb[j] = u + v;
        yb[j + len] = u - v;
      }
    }
  }
}

// LFM2's short conv (graph kShortConv), one work-item per (channel c, token t). src [T][L]: where
// tap j of token t reads (host-built from seq, OpenclBackend::op_short_conv): >= 0 a token of u,
// -1 zero history (a fresh sequence), <= -2 state column -2 - code; src[t][L-1] < 0 marks a
// padding token (output 0). As graph/ref_ops.cpp: the products and their sum in wide, taps in
// order, rounded once (with fp64 the reference's bits: each float product is exact in double).
kernel void short_conv_f32(global const float* u, global const float* w, global const float* state,
                           global const int* src, global float* y, int E, int L) {
  const int c = get_global_id(0), t = get_global_id(1);
  global const int* s = src + (size_t)t * L;
  if (s[L - 1] < 0) {
    y[(size_t)t * E + c] = 0.0f;
    return;
  }
  wide acc = 0;
  for (int j = 0; j < L; ++j) {
    const int k = s[j];
    const wide h = k >= 0    ? (wide)u[(size_t)k * E + c]
                   : k == -1 ? (wide)0
                             : (wide)state[(size_t)(-2 - k) * E + c];
    acc += (wide)w[(size_t)c * L + j] * h;
  }
  y[(size_t)t * E + c] = (float)acc;
}

// kShortConvState: column i of the new states [E, L-1, S] (one work-item per channel and column)
// is a copy of the token (code >= 0) or old state column (-2 - code) that src[i] names.
kernel void short_conv_state_f32(global const float* u, global const float* state,
                                 global const int* src, global float* y, int E) {
  const int c = get_global_id(0), i = get_global_id(1);
  const int k = src[i];
  y[(size_t)i * E + c] = k >= 0 ? u[(size_t)k * E + c] : state[(size_t)(-2 - k) * E + c];
}
