/* A deliberately broken NPU plugin for the loader tests. One source, built several times with
 * one BAD_* macro each: BAD_ABI (wrong abi_version), BAD_NO_SYMBOL (no entry point), BAD_NULL_FN
 * (execute is NULL), BAD_SIZE (struct_size too small), BAD_CAPS (query_caps fails). */
#include <stdio.h>

#include "geniex/npu_plugin.h"

static int g_device;

static geniex_npu_status create(const char* config, geniex_npu_device** out, char* msg,
                                size_t msg_size) {
  (void)config;
  (void)msg;
  (void)msg_size;
  *out = (geniex_npu_device*)&g_device;
  return GENIEX_NPU_OK;
}

static geniex_npu_status query_caps(geniex_npu_device* dev, geniex_npu_caps* caps, char* msg,
                                    size_t msg_size) {
  (void)dev;
#ifdef BAD_CAPS
  (void)caps;
  snprintf(msg, msg_size, "no NPU device found");
  return GENIEX_NPU_INTERNAL;
#else
  (void)msg;
  (void)msg_size;
  caps->struct_size = sizeof(geniex_npu_caps);
  caps->device_name = "bad";
  return GENIEX_NPU_OK;
#endif
}

static geniex_npu_status compile(geniex_npu_device* dev, const geniex_npu_graph* graph,
                                 geniex_npu_compiled** out, char* msg, size_t msg_size) {
  (void)dev;
  (void)graph;
  (void)out;
  snprintf(msg, msg_size, "bad plugin compiles nothing");
  return GENIEX_NPU_UNSUPPORTED;
}

#ifndef BAD_NULL_FN
static geniex_npu_status execute(geniex_npu_device* dev, geniex_npu_compiled* graph,
                                 const geniex_npu_buffer* buffers, uint32_t n_buffers, char* msg,
                                 size_t msg_size) {
  (void)dev;
  (void)graph;
  (void)buffers;
  (void)n_buffers;
  snprintf(msg, msg_size, "bad plugin executes nothing");
  return GENIEX_NPU_INTERNAL;
}
#endif

static void release(geniex_npu_device* dev, geniex_npu_compiled* graph) {
  (void)dev;
  (void)graph;
}

static void destroy(geniex_npu_device* dev) { (void)dev; }

static const geniex_npu_plugin_v1 kTable = {
#ifdef BAD_ABI
    99u,
#else
    GENIEX_NPU_ABI_VERSION,
#endif
#ifdef BAD_SIZE
    8u,
#else
    sizeof(geniex_npu_plugin_v1),
#endif
    "bad",   "0.0.1", create, query_caps, compile,
#ifdef BAD_NULL_FN
    NULL,
#else
    execute,
#endif
    release, destroy, NULL,   NULL,
};

#ifdef BAD_NO_SYMBOL
__attribute__((visibility("default"))) const geniex_npu_plugin_v1* geniex_npu_plugin_get_v0(void) {
  return &kTable;
}
#else
__attribute__((visibility("default"))) const geniex_npu_plugin_v1* geniex_npu_plugin_get(
    uint32_t host_abi_version) {
  (void)host_abi_version;
  return &kTable;
}
#endif
