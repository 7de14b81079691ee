// Attention kernels written once over a vector type V; included (inside an anonymous namespace) by
// each instruction-set file after it defines ATTN_TARGET (the function target attribute, maybe
// empty) and a struct V with:
//   W (lanes), CV (vectors per row in pv's column block), R (register type),
//   zero(), set1(f), load(const float*), load(const uint16_t*), store(float*, R), add(a, b),
//   mul(a, b), max(a, b), fma(a, b, c) = a * b + c, hsum(a), hsum4(const R[4], float[4]) (four
//   hsums), round_f16(a), sub(a, b), exp(a) (kernels/exp_simd.h), D (a vector of doubles), dzero(),
//   dacc(D[2], R) (adds R's lanes, widened, to the two D), dsum(const D[2]) (all their lanes),
//   load_i8(const int8_t*) (W int8 values as floats; W divides 32),
//   unpack_q4(const uint8_t* qs16, int8_t* out32) (Q4_0 nibbles: out[j] = (qs[j] & 15) - 8,
//   out[j + 16] = (qs[j] >> 4) - 8).
// Requires "core/fp16.h", "backends/cpu/kernels/exp_simd.h", <algorithm>, <cstring> and <limits>
// to be included first.
// NOLINTBEGIN(build/namespaces)

inline float attn_to_f32(float x) { return x; }
inline float attn_to_f32(uint16_t x) { return geniex::fp16_to_fp32(x); }

// Q.K dots of NR query rows with NK keys, one accumulator chain per dot over whole vectors, then
// V::hsum4's reduction tree and a scalar tail: each dot's value depends only on its query row and
// key (not on NR, NK or its neighbours), so grouping rows and keys differently gives the same bits.
template <int NR, int NK, class KT>
ATTN_TARGET inline void attn_dots_block(const float* q, int64_t n, const KT* const* k, float* s,
                                        int64_t ss) {
  constexpr int kAcc = NR * NK;
  constexpr int kPad = (kAcc + 3) / 4 * 4;
  typename V::R a[kPad];
#pragma GCC unroll 16
  for (int x = 0; x < kPad; ++x) a[x] = V::zero();  // unrolled: a memset would put a in memory
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) {
    typename V::R kv[NK];
    for (int j = 0; j < NK; ++j) kv[j] = V::load(k[j] + i);
    for (int r = 0; r < NR; ++r) {
      const typename V::R qv = V::load(q + r * n + i);
      for (int j = 0; j < NK; ++j) a[r * NK + j] = V::fma(qv, kv[j], a[r * NK + j]);
    }
  }
  float sums[kPad];
  for (int x = 0; x < kPad; x += 4) V::hsum4(a + x, sums + x);
  for (int r = 0; r < NR; ++r) {
    for (int j = 0; j < NK; ++j) {
      float v = sums[r * NK + j];
      for (int64_t e = i; e < n; ++e) v += q[r * n + e] * attn_to_f32(k[j][e]);
      s[r * ss + j] = v;
    }
  }
}

// The same dots for 4 query rows x 4 keys where V has hsum16 (sixteen hsum4-tree sums at once,
// out[r * 4 + j] for accumulator a[r * 4 + j]): the reductions shared across dots, each dot's
// accumulator chain and reduction tree unchanged, so its bits are attn_dots_block's.
template <class VV, class KT>
ATTN_TARGET inline void attn_dots_4x4(const float* q, int64_t n, const KT* const* k, float* s,
                                      int64_t ss) {
  typename VV::R a[16];
#pragma GCC unroll 16
  for (int x = 0; x < 16; ++x) a[x] = VV::zero();  // unrolled: a memset would put a in memory
  int64_t i = 0;
  for (; i + VV::W <= n; i += VV::W) {
    typename VV::R kv[4];
    for (int j = 0; j < 4; ++j) kv[j] = VV::load(k[j] + i);
    for (int r = 0; r < 4; ++r) {
      const typename VV::R qv = VV::load(q + r * n + i);
      for (int j = 0; j < 4; ++j) a[r * 4 + j] = VV::fma(qv, kv[j], a[r * 4 + j]);
    }
  }
  float sums[16];
  VV::hsum16(a, sums);
  for (int r = 0; r < 4; ++r) {
    for (int j = 0; j < 4; ++j) {
      float v = sums[r * 4 + j];
      for (int64_t e = i; e < n; ++e) v += q[r * n + e] * attn_to_f32(k[j][e]);
      s[r * ss + j] = v;
    }
  }
}

template <class W_>
concept AttnHasHsum16 = requires(const typename W_::R* a, float* o) {
  W_::hsum16(a, o);
};

// Requests the cache lines of the n elements at the rows list entries [m, m + count) (clamped
// to m1) point at: K and V rows are gathered through the key list, which the hardware
// prefetcher cannot follow.
template <class KT>
ATTN_TARGET inline void attn_prefetch_rows(const KT* k, int64_t ks, int64_t n, const float* keys,
                                           int64_t m, int64_t count, int64_t m1) {
  const int64_t e = std::min(m + count, m1);
  for (int64_t j = m; j < e; ++j) {
    const auto* row = reinterpret_cast<const char*>(k + static_cast<int64_t>(keys[j]) * ks);
    for (int64_t b = 0; b < n * static_cast<int64_t>(sizeof(KT)); b += 64) {
      __builtin_prefetch(row + b, 0, 3);
    }
  }
}

// Keys ahead of the one being dotted whose rows are requested.
inline constexpr int64_t kAttnPrefetchKeys = 16;

template <int NR, class KT>
ATTN_TARGET void attn_dots_rows(const float* q, int64_t n, const KT* k, int64_t ks,
                                const float* keys, int64_t m0, int64_t m1, float* s, int64_t ss) {
  constexpr int kNk = NR <= 2 ? 4 : 2;
  int64_t m = m0;
  attn_prefetch_rows(k, ks, n, keys, m, kAttnPrefetchKeys, m1);
  if constexpr (NR == 4 && AttnHasHsum16<V>) {
    for (; m + 4 <= m1; m += 4) {
      attn_prefetch_rows(k, ks, n, keys, m + kAttnPrefetchKeys, 4, m1);
      const KT* rows[4];
      for (int j = 0; j < 4; ++j) rows[j] = k + static_cast<int64_t>(keys[m + j]) * ks;
      attn_dots_4x4<V>(q, n, rows, s + m, ss);
    }
  }
  for (; m + kNk <= m1; m += kNk) {
    attn_prefetch_rows(k, ks, n, keys, m + kAttnPrefetchKeys, kNk, m1);
    const KT* rows[kNk];
    for (int j = 0; j < kNk; ++j) rows[j] = k + static_cast<int64_t>(keys[m + j]) * ks;
    attn_dots_block<NR, kNk>(q, n, rows, s + m, ss);
  }
  for (; m < m1; ++m) {
    const KT* row = k + static_cast<int64_t>(keys[m]) * ks;
    attn_dots_block<NR, 1>(q, n, &row, s + m, ss);
  }
}

template <class KT>
ATTN_TARGET void attn_dots(const float* q, int nr, int64_t n, const KT* k, int64_t ks,
                           const float* keys, int64_t m0, int64_t m1, float* s, int64_t ss) {
  switch (nr) {
    case 1: attn_dots_rows<1>(q, n, k, ks, keys, m0, m1, s, ss); break;
    case 2: attn_dots_rows<2>(q, n, k, ks, keys, m0, m1, s, ss); break;
    case 3: attn_dots_rows<3>(q, n, k, ks, keys, m0, m1, s, ss); break;
    default: attn_dots_rows<4>(q, n, k, ks, keys, m0, m1, s, ss); break;
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
    // This call's columns of a row further down the list.
    attn_prefetch_rows(v + c0, vs, NC * V::W, keys, m + kAttnPrefetchKeys, 1, m1);
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

// s[i] = e^(s[i] - mx) in place (-inf scores give 0), returning the sum of the results in
// double: each vector of exponentials is widened and added lane-wise (V::dacc), the lanes summed
// at the end.
ATTN_TARGET double attn_softmax_exp(float* s, int64_t n, float mx) {
  const typename V::R m = V::set1(mx);
  typename V::D acc[2] = {V::dzero(), V::dzero()};
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) {
    const typename V::R e = V::exp(V::sub(V::load(s + i), m));
    V::store(s + i, e);
    V::dacc(acc, e);
  }
  if (i < n) {  // the tail through the same vector exp (padded with -inf, whose exp is 0), so a
                // score's value does not depend on where it sits in the row
    float t[V::W];
    std::fill(t, t + V::W, -std::numeric_limits<float>::infinity());
    std::copy(s + i, s + n, t);
    const typename V::R e = V::exp(V::sub(V::load(t), m));
    V::store(t, e);
    V::dacc(acc, e);
    std::copy(t, t + (n - i), s + i);
  }
  return V::dsum(acc);
}

// Token-major decode kernels (attention_kernels.h: head_dots / pv_heads): each key's row of ALL
// kv heads is read at once, one cache row after another, so the hardware prefetcher streams the
// cache instead of waiting on a 128-byte slice every n_kv_head * d elements.

// s[(h * n_rows + r) * ns + m] = q[(h * n_rows + r) * n] . row[h * n] for every kv head h, row
// r and key m in [m0, m1) (row = k + keys[m] * ks). Each dot is attn_dots_block's arithmetic (one
// chain over whole vectors, hsum4's tree, the scalar tail), four dots to a tree.
template <class KT>
ATTN_TARGET void attn_head_dots(const float* q, int64_t n_rows, int64_t n_kv_head, int64_t n,
                                const KT* k, int64_t ks, const float* keys, int64_t m0, int64_t m1,
                                float* s, int64_t ns) {
  const int64_t count = n_rows * n_kv_head;  // dots per key, (head, row) order
  for (int64_t m = m0; m < m1; ++m) {
    const KT* row = k + static_cast<int64_t>(keys[m]) * ks;
    for (int64_t j0 = 0; j0 < count; j0 += 4) {
      const KT* kr[4];
      const float* qr[4];
      int64_t js[4];
      for (int j = 0; j < 4; ++j) {  // past the end: the last dot again, its result dropped
        js[j] = std::min(j0 + j, count - 1);
        kr[j] = row + (js[j] / n_rows) * n;
        qr[j] = q + js[j] * n;
      }
      typename V::R a[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
      int64_t i = 0;
      for (; i + V::W <= n; i += V::W) {
        for (int j = 0; j < 4; ++j) a[j] = V::fma(V::load(qr[j] + i), V::load(kr[j] + i), a[j]);
      }
      float sums[4];
      V::hsum4(a, sums);
      for (int j = 0; j < 4 && j0 + j < count; ++j) {
        float v = sums[j];
        for (int64_t e = i; e < n; ++e) v += qr[j][e] * attn_to_f32(kr[j][e]);
        s[js[j] * ns + m] = v;
      }
    }
  }
}

// For m in [m0, m1), in that order, row = v + keys[m] * vs, every kv head h in [h0, h1) and row
// r: acc[(h * n_rows + r) * n + i] += p[(h * n_rows + r) * ps + m] * row[h * n + i]. Per element
// the multiply-add chain of attn_pv_cols (whole vectors) and of attn_pv_rows's scalar tail.
template <class KT>
ATTN_TARGET void attn_pv_heads(const float* p, int64_t ps, int64_t n_rows, int64_t h0, int64_t h1,
                               const float* keys, int64_t m0, int64_t m1, const KT* v, int64_t vs,
                               int64_t n, float* acc) {
  // A run of heads is part of each row, which the hardware prefetcher does not follow from row
  // to row: the run of the row kAhead keys on is requested (into L2: more misses in flight).
  constexpr int64_t kAhead = 8;
  const int64_t run_bytes = (h1 - h0) * n * static_cast<int64_t>(sizeof(KT));
  for (int64_t m = m0; m < m1; ++m) {
    const KT* row = v + static_cast<int64_t>(keys[m]) * vs;
    if (m + kAhead < m1) {
      const auto* ahead =
          reinterpret_cast<const char*>(v + static_cast<int64_t>(keys[m + kAhead]) * vs + h0 * n);
      for (int64_t b = 0; b < run_bytes; b += 64) __builtin_prefetch(ahead + b, 0, 2);
    }
    for (int64_t h = h0; h < h1; ++h) {
      const KT* x = row + h * n;
      float* ah = acc + h * n_rows * n;
      const float* ph = p + h * n_rows * ps + m;
      int64_t c = 0;
      for (; c + V::W <= n; c += V::W) {
        const typename V::R xv = V::load(x + c);
        for (int64_t r = 0; r < n_rows; ++r) {
          float* ar = ah + r * n + c;
          V::store(ar, V::fma(V::set1(ph[r * ps]), xv, V::load(ar)));
        }
      }
      for (; c < n; ++c) {
        const float xs = attn_to_f32(x[c]);
        for (int64_t r = 0; r < n_rows; ++r) ah[r * n + c] += ph[r * ps] * xs;
      }
    }
  }
}

ATTN_TARGET void attn_head_dots_f32(const float* q, int64_t n_rows, int64_t n_kv_head, int64_t n,
                                    const float* k, int64_t ks, const float* keys, int64_t m0,
                                    int64_t m1, float* s, int64_t ns) {
  attn_head_dots(q, n_rows, n_kv_head, n, k, ks, keys, m0, m1, s, ns);
}
ATTN_TARGET void attn_head_dots_f16(const float* q, int64_t n_rows, int64_t n_kv_head, int64_t n,
                                    const uint16_t* k, int64_t ks, const float* keys, int64_t m0,
                                    int64_t m1, float* s, int64_t ns) {
  attn_head_dots(q, n_rows, n_kv_head, n, k, ks, keys, m0, m1, s, ns);
}
ATTN_TARGET void attn_pv_heads_f32(const float* p, int64_t ps, int64_t n_rows, int64_t h0,
                                   int64_t h1, const float* keys, int64_t m0, int64_t m1,
                                   const float* v, int64_t vs, int64_t n, float* acc) {
  attn_pv_heads(p, ps, n_rows, h0, h1, keys, m0, m1, v, vs, n, acc);
}
ATTN_TARGET void attn_pv_heads_f16(const float* p, int64_t ps, int64_t n_rows, int64_t h0,
                                   int64_t h1, const float* keys, int64_t m0, int64_t m1,
                                   const uint16_t* v, int64_t vs, int64_t n, float* acc) {
  attn_pv_heads(p, ps, n_rows, h0, h1, keys, m0, m1, v, vs, n, acc);
}

ATTN_TARGET void attn_dots_f32(const float* q, int nr, int64_t n, const float* k, int64_t ks,
                               const float* keys, int64_t m0, int64_t m1, float* s, int64_t ss) {
  attn_dots(q, nr, n, k, ks, keys, m0, m1, s, ss);
}
ATTN_TARGET void attn_dots_f16(const float* q, int nr, int64_t n, const uint16_t* k, int64_t ks,
                               const float* keys, int64_t m0, int64_t m1, float* s, int64_t ss) {
  attn_dots(q, nr, n, k, ks, keys, m0, m1, s, ss);
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

// Dense scores of NR query rows against every panel of a packed K (Kernels::dense_scores): per
// step of CV vectors of keys, NR x CV accumulators, each one multiply-add chain over the
// elements in order (a broadcast query element times a vector of keys), then times mul.
template <int NR>
ATTN_TARGET void attn_dense_rows(const float* q, int64_t n, const float* kp, int64_t n_panels,
                                 float mul, float* s, int64_t ss) {
  constexpr int kC = V::CV;
  constexpr int64_t kStep = kC * V::W;
  static_assert(kDenseKeys % kStep == 0, "a panel holds whole steps");
  const typename V::R scale = V::set1(mul);
  for (int64_t b = 0; b < n_panels; ++b) {
    const float* panel = kp + b * n * kDenseKeys;
    for (int64_t j0 = 0; j0 < kDenseKeys; j0 += kStep) {
      typename V::R a[NR][kC];
      for (int r = 0; r < NR; ++r) {
        for (int c = 0; c < kC; ++c) a[r][c] = V::zero();
      }
      for (int64_t i = 0; i < n; ++i) {
        const float* row = panel + i * kDenseKeys + j0;
        typename V::R kv[kC];
        for (int c = 0; c < kC; ++c) kv[c] = V::load(row + c * V::W);
        for (int r = 0; r < NR; ++r) {
          const typename V::R qv = V::set1(q[r * n + i]);
          for (int c = 0; c < kC; ++c) a[r][c] = V::fma(qv, kv[c], a[r][c]);
        }
      }
      float* out = s + b * kDenseKeys + j0;
      for (int r = 0; r < NR; ++r) {
        for (int c = 0; c < kC; ++c) V::store(out + r * ss + c * V::W, V::mul(a[r][c], scale));
      }
    }
  }
}

ATTN_TARGET void attn_dense_scores(const float* q, int nr, int64_t n, const float* kp,
                                   int64_t n_panels, float mul, float* s, int64_t ss) {
  switch (nr) {
    case 1: attn_dense_rows<1>(q, n, kp, n_panels, mul, s, ss); break;
    case 2: attn_dense_rows<2>(q, n, kp, n_panels, mul, s, ss); break;
    case 3: attn_dense_rows<3>(q, n, kp, n_panels, mul, s, ss); break;
    default: attn_dense_rows<4>(q, n, kp, n_panels, mul, s, ss); break;
  }
}

ATTN_TARGET float attn_row_max(const float* x, int64_t n) {
  float best = x[0];
  int64_t i = 0;
  if (n >= V::W) {
    typename V::R m = V::load(x);
    for (i = V::W; i + V::W <= n; i += V::W) m = V::max(m, V::load(x + i));
    float lanes[V::W];
    V::store(lanes, m);
    best = *std::max_element(lanes, lanes + V::W);
  }
  for (; i < n; ++i) best = std::max(best, x[i]);
  return best;
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
