// Dequantization of one 32-element unit of a weight row into y[32], with the reference's
// operation order (quant/dequant*.cpp) so values are bit-identical. A unit is a block of the
// 32-element formats and a sub-block of the 256-element K-quants.

inline void deq_q4_0(global const uchar* row, int u, float* y) {
  global const uchar* b = row + (size_t)u * 18;
  const float d = ld_half(b);
  for (int j = 0; j < 16; ++j) {
    const uchar q = b[2 + j];
    y[j] = d * (float)((int)(q & 0xF) - 8);
    y[j + 16] = d * (float)((int)(q >> 4) - 8);
  }
}

inline void deq_q5_0(global const uchar* row, int u, float* y) {
  global const uchar* b = row + (size_t)u * 22;
  const float d = ld_half(b);
  const uint h = (uint)b[2] | ((uint)b[3] << 8) | ((uint)b[4] << 16) | ((uint)b[5] << 24);
  for (int j = 0; j < 16; ++j) {
    const uchar q = b[6 + j];
    const int q0 = (int)(q & 0xF) | (int)(((h >> j) & 1u) << 4);
    const int q1 = (int)(q >> 4) | (int)(((h >> (j + 16)) & 1u) << 4);
    y[j] = d * (float)(q0 - 16);
    y[j + 16] = d * (float)(q1 - 16);
  }
}

inline void deq_q8_0(global const uchar* row, int u, float* y) {
  global const uchar* b = row + (size_t)u * 34;
  const float d = ld_half(b);
  for (int j = 0; j < 32; ++j) y[j] = (float)((char)b[2 + j]) * d;
}

// The 6-bit scale and min of sub-block j of a Q4_K block (scales: 12 bytes).
inline void scale_min_k4(int j, global const uchar* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

inline void deq_q4_k(global const uchar* row, int u, float* y) {
  global const uchar* b = row + (size_t)(u / 8) * 144;
  const int s = u % 8, c = s / 2, h = s % 2;
  const float d = ld_half(b), dmin = ld_half(b + 2);
  int sc, mn;
  scale_min_k4(s, b + 4, &sc, &mn);
  const float dl = d * (float)sc;
  const float ml = dmin * (float)mn;
  global const uchar* qs = b + 16 + 32 * c;
  for (int l = 0; l < 32; ++l) y[l] = dl * (float)((qs[l] >> (4 * h)) & 0xF) - ml;
}

inline void deq_q6_k(global const uchar* row, int u, float* y) {
  global const uchar* b = row + (size_t)(u / 8) * 210;
  const int s = u % 8, n = s / 4, r = s % 4;
  const float d = ld_half(b + 208);
  global const uchar* ql = b + 64 * n + (r & 1) * 32;
  global const uchar* qh = b + 128 + 32 * n;
  global const char* scales = (global const char*)(b + 192);
  for (int l = 0; l < 32; ++l) {
    const int low = r < 2 ? (ql[l] & 0xF) : (ql[l] >> 4);
    const int high = (qh[l] >> (2 * r)) & 3;
    const float dl = d * (float)scales[8 * n + l / 16 + 2 * r];
    y[l] = dl * (float)((low | (high << 4)) - 32);
  }
}

inline void deq_q5_k(global const uchar* row, int u, float* y) {
  global const uchar* b = row + (size_t)(u / 8) * 176;
  const int s = u % 8, c = s / 2, h = s % 2;
  const float d = ld_half(b), dmin = ld_half(b + 2);
  int sc, mn;
  scale_min_k4(s, b + 4, &sc, &mn);
  const float dl = d * (float)sc;
  const float ml = dmin * (float)mn;
  global const uchar* qh = b + 16;
  global const uchar* qs = b + 48 + 32 * c;
  for (int l = 0; l < 32; ++l) {
    const int q = ((qs[l] >> (4 * h)) & 0xF) | (((qh[l] >> s) & 1) << 4);
    y[l] = dl * (float)q - ml;
  }
}

constant char kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                  1,    13,   25,  38,  53,  69,  89,  113};

inline void deq_iq4_nl(global const uchar* row, int u, float* y) {
  global const uchar* b = row + (size_t)u * 18;
  const float d = ld_half(b);
  for (int j = 0; j < 16; ++j) {
    const uchar q = b[2 + j];
    y[j] = d * (float)kIq4nlValues[q & 0xF];
    y[j + 16] = d * (float)kIq4nlValues[q >> 4];
  }
}
