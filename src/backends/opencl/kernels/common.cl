// Shared helpers. Built with -DWG=<work-group size> (a power of two). Only core OpenCL 1.2:
// vload_half / vstore_half read and write binary16 without cl_khr_fp16.
#pragma OPENCL FP_CONTRACT OFF

// `wide`: double where the device has cl_khr_fp64 (PoCL, desktop GPUs), else float (Adreno).
// The reference computes norms, activations and softmax sums in double and rounds once to
// float; with fp64 these kernels do the same, so their results equal the reference's (and the
// CPU backend's) almost always bit for bit, instead of differing by an ulp or two. Those ulps
// matter: a later Q8_0 activation quantization can round them to a different integer.
#if defined(cl_khr_fp64) && !defined(GENIEX_NO_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double wide;
#else
typedef float wide;
#endif

// binary16 at byte address p (2-byte aligned: every block field is).
inline float ld_half(global const uchar* p) { return vload_half(0, (global const half*)p); }

// Sum of v over the work-group (WG threads, all must call it); scratch holds WG floats.
inline float wg_sum(float v, local float* scratch) {
  const int lid = get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[0];
}

// Max of v over the work-group.
inline float wg_max(float v, local float* scratch) {
  const int lid = get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[0];
}

// Sum of a wide value over the work-group; scratch holds WG wides.
inline wide wg_sum_w(wide v, local wide* scratch) {
  const int lid = get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[0];
}

// Max of a wide value over the work-group.
inline wide wg_max_w(wide v, local wide* scratch) {
  const int lid = get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[0];
}
