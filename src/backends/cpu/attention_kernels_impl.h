// Attention kernels written once over a vector type V; included (inside an anonymous namespace) by
// each instruction-set file after it defines ATTN_TARGET (the function target attribute, maybe
// empty) and a struct V with:
//   W (lanes), CV (vectors per row in pv's column block), R (register type),
//   zero(), set1(f), load(const float*), load(const uint16_t*), store(float*, R), add(a, b),
//   mul(a, b), fma(a, b, c) = a * b + c, hsum(a), hsum4(const R[4], float[4]) (four hsums),
//   round_f16(a), load_i8(const int8_t*) (W int8 values as floats; W divides 32),
//   unpack_q4(const uint8_t* qs16, int8_t* out32) (Q4_0 nibbles: out[j] = (qs[j] & 15) - 8,
//   out[j + 16] = (qs[j] >> 4) - 8).
// Requires "core/fp16.h", <algorithm> and <cstring> to be included first.
// NOLINTBEGIN(build/namespaces)

inline float attn_to_f32(float x) { return x; }
inline float attn_to_f32(uint16_t x) { return geniex::fp16_to_fp32(x); }

template <int NR, class KT>
ATTN_TARGET void attn_dot_rows(const float* q, int64_t n, const KT* k, float* out) {
  typename V::R a0[NR], a1[NR];
  for (int r = 0; r < NR; ++r) a0[r] = a1[r] = V::zero();
  int64_t i = 0;
  for (; i + 2 * V::W <= n; i += 2 * V::W) {
    const typename V::R k0 = V::load(k + i), k1 = V::load(k + i + V::W);
    for (int r = 0; r < NR; ++r) {
      a0[r] = V::fma(V::load(q + r * n + i), k0, a0[r]);
      a1[r] = V::fma(V::load(q + r * n + i + V::W), k1, a1[r]);
    }
  }
  for (; i + V::W <= n; i += V::W) {
    const typename V::R k0 = V::load(k + i);
    for (int r = 0; r < NR; ++r) a0[r] = V::fma(V::load(q + r * n + i), k0, a0[r]);
  }
  float sums[NR];
  if constexpr (NR == 4) {
    const typename V::R t[4] = {V::add(a0[0], a1[0]), V::add(a0[1], a1[1]), V::add(a0[2], a1[2]),
                                V::add(a0[3], a1[3])};
    V::hsum4(t, sums);
  } else {
    for (int r = 0; r < NR; ++r) sums[r] = V::hsum(V::add(a0[r], a1[r]));
  }
  for (int r = 0; r < NR; ++r) {
    float s = sums[r];
    for (int64_t j = i; j < n; ++j) s += q[r * n + j] * attn_to_f32(k[j]);
    out[r] = s;
  }
}

template <class KT>
ATTN_TARGET void attn_dot(const float* q, int nr, int64_t n, const KT* k, float* out) {
  switch (nr) {
    case 1: attn_dot_rows<1>(q, n, k, out); break;
    case 2: attn_dot_rows<2>(q, n, k, out); break;
    case 3: attn_dot_rows<3>(q, n, k, out); break;
    default: attn_dot_rows<4>(q, n, k, out); break;
  }
}

// Columns [c0, c0 + NC * W) of acc over keys [m0, m1), accumulators in registers.
template <int NR, int NC, class VT>
ATTN_TARGET void attn_pv_cols(const float* p, int64_t ps, const float* keys, int64_t m0, int64_t m1,
                              const VT* v, int64_t vs, int64_t c0, float* acc, int64_t as) {
  typename V::R a[NR][NC];
  for (int r = 0; r < NR; ++r) {
    for (int c = 0; c < NC; ++c) a[r][c] = V::load(acc + r * as + c0 + c * V::W);
  }
  for (int64_t m = m0; m < m1; ++m) {
    const VT* row = v + static_cast<int64_t>(keys[m]) * vs + c0;
    typename V::R x[NC];
    for (int c = 0; c < NC; ++c) x[c] = V::load(row + c * V::W);
    for (int r = 0; r < NR; ++r) {
      const typename V::R pr = V::set1(p[r * ps + m]);
      for (int c = 0; c < NC; ++c) a[r][c] = V::fma(pr, x[c], a[r][c]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int c = 0; c < NC; ++c) V::store(acc + r * as + c0 + c * V::W, a[r][c]);
  }
}

template <int NR, class VT>
ATTN_TARGET void attn_pv_rows(const float* p, int64_t ps, const float* keys, int64_t m0, int64_t m1,
                              const VT* v, int64_t vs, int64_t n, float* acc, int64_t as) {
  // Key blocks keep the V rows of one block in cache across the column blocks.
  constexpr int64_t kKeyBlock = 128;
  for (int64_t b0 = m0; b0 < m1; b0 += kKeyBlock) {
    const int64_t b1 = std::min(m1, b0 + kKeyBlock);
    int64_t c = 0;
    for (; c + V::CV * V::W <= n; c += V::CV * V::W) {
      attn_pv_cols<NR, V::CV>(p, ps, keys, b0, b1, v, vs, c, acc, as);
    }
    for (; c + V::W <= n; c += V::W) attn_pv_cols<NR, 1>(p, ps, keys, b0, b1, v, vs, c, acc, as);
    for (; c < n; ++c) {
      for (int64_t m = b0; m < b1; ++m) {
        const float x = attn_to_f32(v[static_cast<int64_t>(keys[m]) * vs + c]);
        for (int r = 0; r < NR; ++r) acc[r * as + c] += p[r * ps + m] * x;
      }
    }
  }
}

template <class VT>
ATTN_TARGET void attn_pv(const float* p, int64_t ps, int nr, const float* keys, int64_t m0,
                         int64_t m1, const VT* v, int64_t vs, int64_t n, float* acc, int64_t as) {
  switch (nr) {
    case 1: attn_pv_rows<1>(p, ps, keys, m0, m1, v, vs, n, acc, as); break;
    case 2: attn_pv_rows<2>(p, ps, keys, m0, m1, v, vs, n, acc, as); break;
    case 3: attn_pv_rows<3>(p, ps, keys, m0, m1, v, vs, n, acc, as); break;
    default: attn_pv_rows<4>(p, ps, keys, m0, m1, v, vs, n, acc, as); break;
  }
}

ATTN_TARGET void attn_scale(float* x, int64_t n, float mul, bool round_f16) {
  const typename V::R s = V::set1(mul);
  int64_t i = 0;
  if (round_f16) {
    for (; i + V::W <= n; i += V::W) V::store(x + i, V::round_f16(V::mul(V::load(x + i), s)));
  } else {
    for (; i + V::W <= n; i += V::W) V::store(x + i, V::mul(V::load(x + i), s));
  }
  for (; i < n; ++i) {
    const float y = x[i] * mul;
    x[i] = round_f16 ? geniex::fp16_to_fp32(geniex::fp32_to_fp16(y)) : y;
  }
}

ATTN_TARGET void attn_dot_f32(const float* q, int nr, int64_t n, const float* k, float* out) {
  attn_dot(q, nr, n, k, out);
}
ATTN_TARGET void attn_dot_f16(const float* q, int nr, int64_t n, const uint16_t* k, float* out) {
  attn_dot(q, nr, n, k, out);
}
ATTN_TARGET void attn_pv_f32(const float* p, int64_t ps, int nr, const float* keys, int64_t m0,
                             int64_t m1, const float* v, int64_t vs, int64_t n, float* acc,
                             int64_t as) {
  attn_pv(p, ps, nr, keys, m0, m1, v, vs, n, acc, as);
}
ATTN_TARGET void attn_pv_f16(const float* p, int64_t ps, int nr, const float* keys, int64_t m0,
                             int64_t m1, const uint16_t* v, int64_t vs, int64_t n, float* acc,
                             int64_t as) {
  attn_pv(p, ps, nr, keys, m0, m1, v, vs, n, acc, as);
}

// One 32-element block of int8 values times its f16 scale, as float(q) * d.
ATTN_TARGET inline void attn_scale_block(const int8_t* qs, uint16_t d16, float* dst) {
  const typename V::R d = V::set1(geniex::fp16_to_fp32(d16));
  for (int i = 0; i < 32; i += V::W) V::store(dst + i, V::mul(V::load_i8(qs + i), d));
}

ATTN_TARGET void attn_dequant_q8_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = src + b * 34;  // f16 d, 32 x int8
    uint16_t d16;
    std::memcpy(&d16, blk, 2);
    attn_scale_block(reinterpret_cast<const int8_t*>(blk + 2), d16, dst + b * 32);
  }
}

ATTN_TARGET void attn_dequant_q4_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = src + b * 18;  // f16 d, 16 bytes: element j low nibble, j + 16 high
    uint16_t d16;
    std::memcpy(&d16, blk, 2);
    int8_t qs[32];
    V::unpack_q4(blk + 2, qs);
    attn_scale_block(qs, d16, dst + b * 32);
  }
}

// NOLINTEND(build/namespaces)
