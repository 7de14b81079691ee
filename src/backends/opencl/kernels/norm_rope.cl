// Row reductions (RMSNorm, softmax: one work-group per row) and RoPE.

kernel void rms_norm_f32(global const float* x, global const float* w, int has_w, global float* y,
                         int n, float eps) {
  local float scratch[WG];
  const size_t row = get_group_id(0);
  const int lid = get_local_id(0);
  global const float* xr = x + row * n;
  float ss = 0.0f;
  for (int i = lid; i < n; i += WG) ss += xr[i] * xr[i];
  ss = wg_sum(ss, scratch);
  const float inv = 1.0f / sqrt(ss / (float)n + eps);
  for (int i = lid; i < n; i += WG) {
    const float v = xr[i] * inv;
    y[row * n + i] = has_w ? v * w[i] : v;
  }
}

kernel void softmax_f32(global const float* x, global float* y, int n, float scale) {
  local float scratch[WG];
  const size_t row = get_group_id(0);
  const int lid = get_local_id(0);
  global const float* xr = x + row * n;
  float mx = -INFINITY;
  for (int i = lid; i < n; i += WG) mx = fmax(mx, xr[i] * scale);
  mx = wg_max(mx, scratch);
  float sum = 0.0f;
  for (int i = lid; i < n; i += WG) {
    const float v = xr[i] * scale;
    sum += v == -INFINITY ? 0.0f : exp(v - mx);
  }
  sum = wg_sum(sum, scratch);
  for (int i = lid; i < n; i += WG) {
    const float v = xr[i] * scale;
    y[row * n + i] = sum > 0.0f && v != -INFINITY ? exp(v - mx) / sum : 0.0f;
  }
}

// x, y [d, H, T]; work-item (i, h, t): i < n_dims / 2 rotates pair i, larger i copies one of
// the d - n_dims pass-through elements. neox: pairs (i, i + n_dims/2), else (2i, 2i + 1).
kernel void rope_f32(global const float* x, global const int* pos, global const float* ff,
                     int has_ff, global float* y, int d, int n_dims, float base, float freq_scale,
                     int neox) {
  const int i = get_global_id(0), h = get_global_id(1), t = get_global_id(2);
  const int H = get_global_size(1);
  const size_t off = ((size_t)t * H + h) * d;
  const int half_dims = n_dims / 2;
  if (i >= half_dims) {
    const int e = n_dims + (i - half_dims);
    y[off + e] = x[off + e];
    return;
  }
  float theta = (float)pos[t] * freq_scale * pow(base, -2.0f * (float)i / (float)n_dims);
  if (has_ff) theta /= ff[i];
  float c;
  const float s = sincos(theta, &c);
  const int i0 = neox ? i : 2 * i;
  const int i1 = neox ? i + half_dims : 2 * i + 1;
  const float a = x[off + i0], b = x[off + i1];
  y[off + i0] = a * c - b * s;
  y[off + i1] = a * s + b * c;
}
