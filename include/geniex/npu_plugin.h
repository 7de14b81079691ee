/* GenieX NPU plugin ABI, version 1: the C function table a vendor NPU runtime (QNN HTP,
 * NeuroPilot, ...) exports so that GenieX can place whole static-shape subgraphs on it.
 *
 * Pure C (C99 and C++): no STL, no exceptions, no C++ types cross the shared-object boundary.
 * A plugin is a shared object named libgeniex_npu_<name>.so that exports one symbol,
 * GENIEX_NPU_ENTRY_SYMBOL, of type geniex_npu_get_fn. See src/backends/npu/README.md for the call
 * sequence, ownership, threading and versioning rules.
 */
#ifndef GENIEX_NPU_PLUGIN_H_
#define GENIEX_NPU_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes. A host passes it to the entry point; a plugin built
 * against another major version returns NULL or a table with its own abi_version. */
#define GENIEX_NPU_ABI_VERSION 1u

/** Name of the one exported entry point (type geniex_npu_get_fn). */
#define GENIEX_NPU_ENTRY_SYMBOL "geniex_npu_plugin_get"

/** Maximum inputs of one op (Attention has the most: 7). */
#define GENIEX_NPU_MAX_OP_INPUTS 8

/** Outcome of every fallible call. Never an exception, never an abort across the boundary. */
typedef enum geniex_npu_status {
  GENIEX_NPU_OK = 0,               /**< success */
  GENIEX_NPU_UNSUPPORTED = 1,      /**< valid request this device cannot do (op, dtype, shape) */
  GENIEX_NPU_OUT_OF_MEMORY = 2,    /**< device memory / a memory cap ran out; may succeed later */
  GENIEX_NPU_INVALID_ARGUMENT = 3, /**< malformed call (null pointer, wrong size, bad id) */
  GENIEX_NPU_OUT_OF_RANGE = 4,     /**< a run-time index (slot, row, segment) outside its tensor */
  GENIEX_NPU_INTERNAL = 5          /**< a bug or device failure inside the plugin */
} geniex_npu_status;

/** Op kinds: the GenieX graph IR (src/graph/README.md has the exact semantics of each). */
typedef enum geniex_npu_op_kind {
  GENIEX_NPU_OP_EMBEDDING = 0,    /**< {table [E, V], ids [T] I32} -> [E, T] */
  GENIEX_NPU_OP_MATMUL = 1,       /**< {w [K, N], x [K, M, ..]} -> [N, M, ..] */
  GENIEX_NPU_OP_RMS_NORM = 2,     /**< {x} or {x, w [ne0]}; params.eps */
  GENIEX_NPU_OP_ROPE = 3,         /**< {x [d, H, T], pos [T] I32 (, freq_factors)}; params.rope_* */
  GENIEX_NPU_OP_ATTENTION = 4,    /**< {q, k, v, q_pos, k_pos (, k_rows (, q_seg))}; attn_* */
  GENIEX_NPU_OP_SOFTMAX = 5,      /**< {x}: softmax over ne[0] of x * params.scale */
  GENIEX_NPU_OP_GELU = 6,         /**< {x}: tanh-approximated GELU */
  GENIEX_NPU_OP_SILU = 7,         /**< {x}: x * sigmoid(x) */
  GENIEX_NPU_OP_MUL = 8,          /**< {a, b}: a * b, b broadcast where its ne[i] == 1 */
  GENIEX_NPU_OP_ADD = 9,          /**< {a, b}: a + b, b broadcast where its ne[i] == 1 */
  GENIEX_NPU_OP_SCALE = 10,       /**< {x}: x * params.scale */
  GENIEX_NPU_OP_SOFTCAP = 11,     /**< {x}: params.scale * tanh(x / params.scale) */
  GENIEX_NPU_OP_GLU = 12,         /**< {gate, up}: act(gate) * up, act = params.glu */
  GENIEX_NPU_OP_RESHAPE = 13,     /**< {x}: same elements, shape params.ne */
  GENIEX_NPU_OP_GET_ROWS = 14,    /**< {x [E, T], idx [n] I32} -> [E, n] */
  GENIEX_NPU_OP_CACHE_WRITE = 15, /**< {state, src, slots [T] I32} -> the state (an alias) */
  GENIEX_NPU_OP_COUNT = 16        /**< number of kinds (not an op) */
} geniex_npu_op_kind;

/** How a tensor of a compiled graph gets its value. */
typedef enum geniex_npu_tensor_role {
  GENIEX_NPU_TENSOR_INPUT = 0,  /**< bound per execute (F32 activations, I32 ids/positions) */
  GENIEX_NPU_TENSOR_WEIGHT = 1, /**< given once, at compile time (geniex_npu_tensor.data) */
  GENIEX_NPU_TENSOR_STATE = 2,  /**< bound per execute; persistent, read and written in place */
  GENIEX_NPU_TENSOR_OP = 3      /**< computed by the op whose `output` it is */
} geniex_npu_tensor_role;

/** Element types are GGUF/ggml type ids: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 12 Q4_K, 14 Q6_K,
 * 26 I32, 30 BF16, ... (shared/spec/GGUF.md). Masks below have bit (1 << id) set per type. */
typedef uint32_t geniex_npu_dtype;

/** One tensor of a subgraph. Shapes follow ggml: ne[0] is contiguous, unused dims are 1. */
typedef struct geniex_npu_tensor {
  uint32_t id;            /**< unique within the graph (GenieX uses its node id) */
  geniex_npu_dtype dtype; /**< GGUF type id; op results are always F32 (0) */
  int64_t ne[4];          /**< static shape */
  uint32_t role;          /**< a geniex_npu_tensor_role */
  const char* name;       /**< for messages; never NULL (may be ""); valid during compile only */
  const void* data;       /**< WEIGHT only: host bytes of `dtype`; valid during compile only */
  uint64_t data_bytes;    /**< WEIGHT only: size of `data` in bytes */
} geniex_npu_tensor;

/** Parameters of one op, a plain struct; fields a kind does not use are ignored. */
typedef struct geniex_npu_op_params {
  float eps;                   /**< RMS_NORM epsilon */
  float scale;                 /**< SCALE factor, SOFTMAX input scale, SOFTCAP cap */
  int32_t rope_mode;           /**< ROPE: 0 adjacent pairs (llama), 1 NeoX halves */
  int32_t rope_n_dims;         /**< ROPE: rotated dims per head, 0 = whole head */
  float rope_base;             /**< ROPE: theta base */
  float rope_freq_scale;       /**< ROPE: position scale */
  float attn_scale;            /**< ATTENTION: multiplies q.k */
  int32_t attn_causal;         /**< ATTENTION: 1 hides keys at later positions */
  int32_t attn_sliding_window; /**< ATTENTION: 0 none, else window incl. the current token */
  float attn_softcap;          /**< ATTENTION: 0 none, else cap * tanh(score / cap) */
  int32_t glu;                 /**< GLU activation: 0 SiLU, 1 GELU-tanh */
  int64_t ne[4];               /**< RESHAPE target shape */
} geniex_npu_op_params;

/** One op: reads `inputs` (tensor ids) and defines tensor `output` (role OP). */
typedef struct geniex_npu_op {
  uint32_t kind;                             /**< a geniex_npu_op_kind */
  uint32_t output;                           /**< id of the OP tensor it defines */
  uint32_t n_inputs;                         /**< used entries of `inputs` */
  uint32_t inputs[GENIEX_NPU_MAX_OP_INPUTS]; /**< input tensor ids, in the kind's order */
  geniex_npu_op_params params;               /**< kind-specific parameters */
} geniex_npu_op;

/** A subgraph to compile. All pointers are borrowed for the duration of `compile` only. */
typedef struct geniex_npu_graph {
  uint32_t struct_size;             /**< sizeof(geniex_npu_graph) of the host */
  int32_t batch_tokens;             /**< tokens per execute (static); 0 = not a token batch */
  uint32_t n_tensors;               /**< entries of `tensors` */
  const geniex_npu_tensor* tensors; /**< every tensor the ops touch */
  uint32_t n_ops;                   /**< entries of `ops` */
  const geniex_npu_op* ops;         /**< in execution order (inputs defined before use) */
  uint32_t n_outputs;               /**< entries of `outputs` */
  const uint32_t* outputs;          /**< tensor ids whose F32 values execute must return */
} geniex_npu_graph;

/** One host buffer handed to execute. Borrowed for the duration of the call. */
typedef struct geniex_npu_buffer {
  uint32_t tensor_id; /**< an INPUT, STATE, or listed output tensor of the compiled graph */
  void* data;         /**< host memory: inputs are read, outputs written, states read+written */
  uint64_t bytes;     /**< size of `data`; exact for inputs/outputs, >= the tensor for states */
} geniex_npu_buffer;

/** What one op kind accepts. */
typedef struct geniex_npu_op_cap {
  uint32_t kind;       /**< a geniex_npu_op_kind */
  uint64_t dtype_mask; /**< accepted types of its typed input: MATMUL/EMBEDDING the weight,
                            ATTENTION k/v, CACHE_WRITE the state; other kinds: F32 (bit 0) */
} geniex_npu_op_cap;

/** A device's capabilities. Pointers are owned by the plugin, valid until destroy. */
typedef struct geniex_npu_caps {
  uint32_t struct_size;         /**< sizeof(geniex_npu_caps) the plugin filled */
  const char* device_name;      /**< e.g. "Hexagon V75 HTP" */
  uint64_t memory_bytes;        /**< memory cap for compiled graphs (weights + scratch) */
  uint32_t n_ops;               /**< entries of `ops` */
  const geniex_npu_op_cap* ops; /**< supported op kinds; kinds not listed are unsupported */
  uint32_t n_batch_tokens;      /**< entries of `batch_tokens` */
  const int32_t* batch_tokens;  /**< allowed geniex_npu_graph.batch_tokens, e.g. {1, 128} */
  uint64_t weight_dtype_mask;   /**< weight formats compile accepts (bit per GGUF type id) */
} geniex_npu_caps;

/** A device instance (opaque, plugin-owned). */
typedef struct geniex_npu_device geniex_npu_device;
/** A compiled subgraph (opaque, plugin-owned). */
typedef struct geniex_npu_compiled geniex_npu_compiled;

/** The version-1 function table. Mandatory entries are non-NULL; `struct_size` lets a later
 * minor revision append fields: a host reads a field only if it lies within struct_size.
 * Every `msg` argument is a caller-owned buffer of `msg_size` bytes the plugin fills with a
 * NUL-terminated message (truncated to fit) when it returns anything but GENIEX_NPU_OK. */
typedef struct geniex_npu_plugin_v1 {
  uint32_t abi_version; /**< GENIEX_NPU_ABI_VERSION the plugin was built for */
  uint32_t struct_size; /**< sizeof(geniex_npu_plugin_v1) as the plugin was built */
  const char* name;     /**< short plugin name, e.g. "ref", "qnn-htp" (static storage) */
  const char* version;  /**< plugin version text, e.g. "1.0.0" (static storage) */

  /** Mandatory. Opens a device. `config` is NULL or "key=value;key=value" (plugin-defined
   * keys). On success *out is the device, released with destroy. */
  geniex_npu_status (*create)(const char* config, geniex_npu_device** out, char* msg,
                              size_t msg_size);
  /** Mandatory. Fills *caps (struct_size set by the plugin); pointers stay valid until
   * destroy. */
  geniex_npu_status (*query_caps)(geniex_npu_device* dev, geniex_npu_caps* caps, char* msg,
                                  size_t msg_size);
  /** Mandatory. Compiles `graph` (static shapes; weights read now, not later). On success
   * *out is the handle, released with release. UNSUPPORTED: some op/type/shape is not
   * accepted; OUT_OF_MEMORY: it does not fit in what is left of the memory cap. */
  geniex_npu_status (*compile)(geniex_npu_device* dev, const geniex_npu_graph* graph,
                               geniex_npu_compiled** out, char* msg, size_t msg_size);
  /** Mandatory. Runs a compiled graph once: `buffers` has one entry per INPUT and STATE tensor
   * and per graph output. States are updated in place; outputs are written. */
  geniex_npu_status (*execute)(geniex_npu_device* dev, geniex_npu_compiled* graph,
                               const geniex_npu_buffer* buffers, uint32_t n_buffers, char* msg,
                               size_t msg_size);
  /** Mandatory. Frees a compiled graph and the memory it held (NULL is a no-op). */
  void (*release)(geniex_npu_device* dev, geniex_npu_compiled* graph);
  /** Mandatory. Closes the device; every compiled graph must have been released. */
  void (*destroy)(geniex_npu_device* dev);

  /** Optional (may be NULL). Allocates `bytes` of host memory the device can use without a
   * copy (ION / dma-buf / rpcmem); *out receives the address. */
  geniex_npu_status (*alloc_buffer)(geniex_npu_device* dev, uint64_t bytes, void** out, char* msg,
                                    size_t msg_size);
  /** Optional (NULL when alloc_buffer is NULL). Frees memory from alloc_buffer. */
  void (*free_buffer)(geniex_npu_device* dev, void* data);
} geniex_npu_plugin_v1;

/** Type of the exported entry point GENIEX_NPU_ENTRY_SYMBOL. `host_abi_version` is the host's
 * GENIEX_NPU_ABI_VERSION; the plugin returns its static table (never freed), or NULL when it
 * cannot serve that host version. */
typedef const geniex_npu_plugin_v1* (*geniex_npu_get_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* GENIEX_NPU_PLUGIN_H_ */
