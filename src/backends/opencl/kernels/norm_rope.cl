// Row reductions (RMSNorm, LayerNorm, softmax: one work-group per row) and RoPE.

// Both as graph/ref_ops.cpp, in wide (double with fp64): only the order of the sums differs.
kernel void rms_norm_f32(global const float* x, global const float* w, int has_w, global float* y,
                         int n, float eps) {
  local wide scratch[WG];
  const size_t row = get_group_id(0);
  const int lid = get_local_id(0);
  global const float* xr = x + row * n;
  wide ss = 0;
  for (int i = lid; i < n; i += WG) ss += (wide)xr[i] * (wide)xr[i];
  ss = wg_sum_w(ss, scratch);
  const wide inv = (wide)1.0 / sqrt(ss / (wide)n + (wide)eps);
  for (int i = lid; i < n; i += WG) {
    wide v = (wide)xr[i] * inv;
    if (has_w) v *= (wide)w[i];
    y[row * n + i] = (float)v;
  }
}

// LayerNorm as graph/ref_ops.cpp: two passes (mean, then squared deviations) in wide, the scaling
// in wide, rounded once; only the order of the sums differs. flags: bit 0 w given, bit 1 b given.
kernel void layer_norm_f32(global const float* x, global const float* w, global const float* b,
                           int flags, global float* y, int n, float eps) {
  local wide scratch[WG];
  const size_t row = get_group_id(0);
  const int lid = get_local_id(0);
  global const float* xr = x + row * n;
  wide s = 0;
  for (int i = lid; i < n; i += WG) s += (wide)xr[i];
  const wide mean = wg_sum_w(s, scratch) / (wide)n;
  wide ss = 0;
  for (int i = lid; i < n; i += WG) {
    const wide d = (wide)xr[i] - mean;
    ss += d * d;
  }
  ss = wg_sum_w(ss, scratch);
  const wide inv = (wide)1.0 / sqrt(ss / (wide)n + (wide)eps);
  for (int i = lid; i < n; i += WG) {
    wide v = ((wide)xr[i] - mean) * inv;
    if (flags & 1) v *= (wide)w[i];
    if (flags & 2) v += (wide)b[i];
    y[row * n + i] = (float)v;
  }
}

kernel void softmax_f32(global const float* x, global float* y, int n, float scale) {
  local wide scratch[WG];
  const size_t row = get_group_id(0);
  const int lid = get_local_id(0);
  global const float* xr = x + row * n;
  wide m = -INFINITY;
  for (int i = lid; i < n; i += WG) m = fmax(m, (wide)xr[i] * (wide)scale);
  m = wg_max_w(m, scratch);
  wide sum = 0;
  for (int i = lid; i < n; i += WG) {
    const wide v = (wide)xr[i] * (wide)scale;
    sum += v == -INFINITY ? (wide)0 : exp(v - m);
  }
  sum = wg_sum_w(sum, scratch);
  for (int i = lid; i < n; i += WG) {
    const wide v = (wide)xr[i] * (wide)scale;
    y[row * n + i] = sum > 0 && v != -INFINITY ? (float)(exp(v - m) / sum) : 0.0f;
  }
}

// x, y [d, H, T]; work-item (i, h, t): i < n_dims / 2 rotates pair i with cs[t][i] = (cos_hi,
// cos_lo, sin_hi, sin_lo) (double cos / sin from the host, split into float pairs) in wide, as
// the reference does in double; larger i copies one of the d - n_dims pass-through elements.
// neox: pairs (i, i + n_dims/2), else (2i, 2i + 1).
kernel void rope_f32(global const float* x, global const float* cs, global float* y, int d,
                     int n_dims, int neox) {
  const int i = get_global_id(0), h = get_global_id(1), t = get_global_id(2);
  const int H = get_global_size(1);
  const size_t off = ((size_t)t * H + h) * d;
  const int half_dims = n_dims / 2;
  if (i >= half_dims) {
    const int e = n_dims + (i - half_dims);
    y[off + e] = x[off + e];
    return;
  }
  global const float* e = cs + ((size_t)t * half_dims + i) * 4;
  const wide c = (wide)e[0] + (wide)e[1], s = (wide)e[2] + (wide)e[3];
  const int i0 = neox ? i : 2 * i;
  const int i1 = neox ? i + half_dims : 2 * i + 1;
  const wide a = x[off + i0], b = x[off + i1];
  y[off + i0] = (float)(a * c - b * s);
  y[off + i1] = (float)(a * s + b * c);
}
