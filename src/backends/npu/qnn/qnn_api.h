// The subset of Qualcomm's QNN C API (QAIRT 2.x, core API major version 2) that the QNN HTP
// plugin calls, written for GenieX: layouts and enum values only, no Qualcomm header is copied or
// included. Checked against the public QAIRT 2.x headers as published in public repositories
// (QnnInterface.h, QnnCommon.h, QnnTypes.h, QnnDevice.h, QnnGraph.h, QnnLog.h, QnnOpDef.h,
// HTP/QnnHtpDevice.h, HTP/QnnHtpGraph.h of SDKs 2.2x-2.4x) and at run time against
// onnxruntime-qnn 2.7.0's libQnnHtp.so (QAIRT 2.40: core API 2.40.0, HTP backend API 5.51.0;
// qnn_runtime.cpp reads the API version through the table, which checks its order; the custom
// config layouts were confirmed by QNN's log accepting SoC 60 / v73 and fp16 graphs).
//
// Layout rules that matter: every struct is passed by pointer except Qnn_OpConfig_t (by value),
// and arrays of Qnn_Tensor_t are indexed by the runtime with ITS sizeof, so Qnn_Tensor_t carries
// the full union of tensor versions 1 and 2 (144 bytes on LP64) even though we fill version 1.
// The interface table is append-only within a major version: we declare its prefix up to
// deviceFree and never copy it.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>

namespace geniex::npu_qnn::api {

using ErrorHandle = uint64_t;  ///< Qnn_ErrorHandle_t; the code is the low 16 bits
using Handle = void*;          ///< every Qnn_*Handle_t
inline constexpr ErrorHandle kSuccess = 0;
/// The 16-bit error code of a returned handle (QNN_GET_ERROR_CODE).
inline constexpr uint32_t error_code(ErrorHandle e) { return static_cast<uint32_t>(e & 0xFFFF); }

/// The core API major version this file describes (QNN_API_VERSION_MAJOR).
inline constexpr uint32_t kCoreApiMajor = 2;

struct Version {  // Qnn_Version_t
  uint32_t major, minor, patch;
};
struct ApiVersion {  // Qnn_ApiVersion_t
  Version core;
  Version backend;
};

// Qnn_DataType_t
enum DataType : uint32_t {
  kInt32 = 0x0032,
  kUint32 = 0x0132,
  kFloat16 = 0x0216,
  kFloat32 = 0x0232,
  kBool8 = 0x0508,
  // Fixed point (quantized): float = (q + offset) * scale (Qnn_ScaleOffset_t).
  kSfixed4 = 0x0304,
  kSfixed8 = 0x0308,
  kSfixed16 = 0x0316,
  kSfixed32 = 0x0332,
  kUfixed8 = 0x0408,
  kUfixed16 = 0x0416,
  kDataTypeUndefined = 0x7FFFFFFF,
};

// Qnn_TensorType_t
enum TensorType : uint32_t {
  kAppWrite = 0,
  kAppRead = 1,
  kAppReadWrite = 2,
  kNative = 3,
  kStatic = 4,
  kTensorTypeNull = 5,
};

// Qnn_Definition_t / Qnn_QuantizationEncoding_t
enum : uint32_t { kDefinitionDefined = 1, kDefinitionUndefined = 0x7FFFFFFF };
enum : uint32_t {
  kEncodingScaleOffset = 0,        // one Qnn_ScaleOffset_t for the tensor
  kEncodingAxisScaleOffset = 1,    // one per index of `axis` (per channel)
  kEncodingBwAxisScaleOffset = 3,  // per channel, values of `bitwidth` bits in the type's container
  kEncodingUndefined = 0x7FFFFFFF,
};

/// Qnn_ScaleOffset_t: float = (quantized + offset) * scale, scale > 0.
struct ScaleOffset {
  float scale;
  int32_t offset;
};
/// Qnn_AxisScaleOffset_t: one ScaleOffset per index along `axis`.
struct AxisScaleOffset {
  int32_t axis;
  uint32_t num_scale_offsets;
  ScaleOffset* scale_offset;
};

struct QuantizeParams {  // Qnn_QuantizeParams_t (40 bytes)
  uint32_t encoding_definition = kDefinitionUndefined;
  uint32_t quantization_encoding = kEncodingUndefined;
  // The union of encodings; its largest member (Qnn_BwAxisScaleOffset_t) is 32 bytes, 8-aligned.
  alignas(8) uint8_t encoding[32] = {};
};
/// Qnn_BwAxisScaleOffset_t: per-channel scales (and optional offsets) of `bitwidth`-bit values.
struct BwAxisScaleOffset {
  uint32_t bitwidth;
  int32_t axis;
  uint32_t num_elements;
  float* scales;
  int32_t* offsets;  // null: symmetric
};
static_assert(sizeof(BwAxisScaleOffset) == 32 || sizeof(void*) != 8);
static_assert(sizeof(QuantizeParams) == 40 && alignof(QuantizeParams) == 8);
static_assert(sizeof(ScaleOffset) <= 32 && sizeof(AxisScaleOffset) <= 32);

struct ClientBuffer {  // Qnn_ClientBuffer_t
  void* data;
  uint32_t data_size;
};

enum : uint32_t { kMemTypeRaw = 0 };  // Qnn_TensorMemType_t

struct TensorV1 {  // Qnn_TensorV1_t
  uint32_t id;
  const char* name;
  uint32_t type;         // TensorType
  uint32_t data_format;  // 0: dense / flat buffer
  uint32_t data_type;    // DataType
  QuantizeParams quantize_params;
  uint32_t rank;
  uint32_t* dimensions;  // outermost first (the last dimension varies fastest)
  uint32_t mem_type;
  union {
    ClientBuffer client_buf;
    Handle mem_handle;
  };
};

struct TensorV2 {  // Qnn_TensorV2_t: V1's fields, then these (only their size matters here)
  TensorV1 v1_fields;
  uint8_t* is_dynamic_dimensions;
  struct {
    uint32_t type;
    uint32_t hybrid_coo[2];
  } sparse_params;
  uint8_t is_produced;
};

enum : uint32_t { kTensorVersion1 = 1 };

struct Tensor {  // Qnn_Tensor_t
  uint32_t version = kTensorVersion1;
  union {
    TensorV1 v1;
    TensorV2 v2;
  };
  Tensor() : v2{} {}
};
static_assert(sizeof(void*) != 8 || sizeof(Tensor) == 144, "Qnn_Tensor_t is 144 bytes on LP64");

struct Scalar {  // Qnn_Scalar_t (its union holds doubles and pointers since 2.2x)
  uint32_t data_type;
  union {
    float float_value;
    double double_value;
    uint32_t uint32_value;
    int32_t int32_value;
    uint8_t bool8_value;
    const char* string_value;
  };
};

enum : uint32_t { kParamScalar = 0, kParamTensor = 1 };  // Qnn_ParamType_t

struct Param {  // Qnn_Param_t
  uint32_t param_type;
  const char* name;
  union {
    Scalar scalar_param;
    Tensor tensor_param;
  };
  Param() : tensor_param() {}
};

struct OpConfigV1 {  // Qnn_OpConfigV1_t
  const char* name;
  const char* package_name;
  const char* type_name;
  uint32_t num_params;
  Param* params;
  uint32_t num_inputs;
  Tensor* inputs;
  uint32_t num_outputs;
  Tensor* outputs;
};
struct OpConfig {  // Qnn_OpConfig_t (passed by value to graphAddNode)
  uint32_t version = 1;
  OpConfigV1 v1{};
};

/// QnnDevice_Config_t with option QNN_DEVICE_CONFIG_OPTION_CUSTOM (0).
struct DeviceConfig {
  uint32_t option = 0;
  void* custom_config = nullptr;
};

// QnnHtpDevice_ConfigOption_t
enum : uint32_t { kHtpDeviceOptionSoc = 0, kHtpDeviceOptionArch = 1 };

/// QnnHtpDevice_CustomConfig_t: option, then a union (soc model, or {device id, arch}) padded past
/// its largest member. QAIRT 2.40 reads the union at offset 8 (it has grown 8-byte members; with
/// the union at offset 4, as in older headers, it logged "Unsupported HTP Arch 1 0").
struct HtpMinimumArch {  // QnnHtpDevice_Minimum_Arch_t
  uint32_t device_id;
  uint32_t arch;  // 68, 69, 73, 75, 79, 81, ...
};
struct HtpDeviceCustomConfig {
  uint32_t option;
  union alignas(8) {
    uint32_t soc_model;
    HtpMinimumArch arch;
    uint8_t pad[56];
  };
};
static_assert(offsetof(HtpDeviceCustomConfig, soc_model) == 8);

/// QnnGraph_Config_t with option QNN_GRAPH_CONFIG_OPTION_CUSTOM (0).
struct GraphConfig {
  uint32_t option = 0;
  void* custom_config = nullptr;
};

// QnnHtpGraph_ConfigOption_t; Qnn_Precision_t
enum : uint32_t { kHtpGraphOptionPrecision = 2 };
enum : uint32_t { kPrecisionFloat32 = 0, kPrecisionFloat16 = 1 };

/// QnnHtpGraph_CustomConfig_t: option, then a union (the precision for option 2); padded past
/// the largest member (the parallel-execution config, 44 bytes).
struct HtpGraphCustomConfig {
  uint32_t option;
  union alignas(8) {  // the real union holds a uint64_t and pointers: it starts at offset 8
    uint32_t precision;
    uint8_t pad[64];
  };
};
static_assert(offsetof(HtpGraphCustomConfig, precision) == 8);

// QnnLog_Level_t
enum : uint32_t { kLogError = 1, kLogWarn = 2, kLogInfo = 3, kLogVerbose = 4, kLogDebug = 5 };
/// QnnLog_Callback_t.
using LogCallback = void (*)(const char* fmt, uint32_t level, uint64_t timestamp, va_list args);

using BackendCreateFn = ErrorHandle (*)(Handle log, const void** config, Handle* backend);
using BackendGetApiVersionFn = ErrorHandle (*)(ApiVersion* version);
using BackendGetBuildIdFn = ErrorHandle (*)(const char** id);
using BackendFreeFn = ErrorHandle (*)(Handle backend);
using ContextCreateFn = ErrorHandle (*)(Handle backend, Handle device, const void** config,
                                        Handle* context);
using ContextFreeFn = ErrorHandle (*)(Handle context, Handle profile);
using ContextGetBinarySizeFn = ErrorHandle (*)(Handle context, uint64_t* size);
using ContextGetBinaryFn = ErrorHandle (*)(Handle context, void* buffer, uint64_t size,
                                           uint64_t* written);
using ContextCreateFromBinaryFn = ErrorHandle (*)(Handle backend, Handle device,
                                                  const void** config, const void* binary,
                                                  uint64_t size, Handle* context, Handle profile);
using GraphRetrieveFn = ErrorHandle (*)(Handle context, const char* name, Handle* graph);
using GraphCreateFn = ErrorHandle (*)(Handle context, const char* name, const GraphConfig** config,
                                      Handle* graph);
using GraphAddNodeFn = ErrorHandle (*)(Handle graph, OpConfig op);
using GraphFinalizeFn = ErrorHandle (*)(Handle graph, Handle profile, Handle signal);
using GraphExecuteFn = ErrorHandle (*)(Handle graph, const Tensor* inputs, uint32_t n_inputs,
                                       Tensor* outputs, uint32_t n_outputs, Handle profile,
                                       Handle signal);
using TensorCreateGraphTensorFn = ErrorHandle (*)(Handle graph, Tensor* tensor);
using LogCreateFn = ErrorHandle (*)(LogCallback callback, uint32_t max_level, Handle* log);
using LogFreeFn = ErrorHandle (*)(Handle log);
using DeviceCreateFn = ErrorHandle (*)(Handle log, const DeviceConfig** config, Handle* device);
using DeviceFreeFn = ErrorHandle (*)(Handle device);
using AnyFn = void (*)();

/// QNN_INTERFACE_VER_TYPE (core API 2.x), the prefix up to deviceFree, in the table's order.
struct InterfaceTable {
  AnyFn property_has_capability;
  BackendCreateFn backend_create;
  AnyFn backend_set_config;
  BackendGetApiVersionFn backend_get_api_version;
  BackendGetBuildIdFn backend_get_build_id;
  AnyFn backend_register_op_package;
  AnyFn backend_get_supported_operations;
  AnyFn backend_validate_op_config;
  BackendFreeFn backend_free;
  ContextCreateFn context_create;
  AnyFn context_set_config;
  ContextGetBinarySizeFn context_get_binary_size;
  ContextGetBinaryFn context_get_binary;
  ContextCreateFromBinaryFn context_create_from_binary;
  ContextFreeFn context_free;
  GraphCreateFn graph_create;
  AnyFn graph_create_subgraph;
  AnyFn graph_set_config;
  GraphAddNodeFn graph_add_node;
  GraphFinalizeFn graph_finalize;
  GraphRetrieveFn graph_retrieve;
  GraphExecuteFn graph_execute;
  AnyFn graph_execute_async;
  AnyFn tensor_create_context_tensor;
  TensorCreateGraphTensorFn tensor_create_graph_tensor;
  LogCreateFn log_create;
  AnyFn log_set_log_level;
  LogFreeFn log_free;
  AnyFn profile_create;
  AnyFn profile_set_config;
  AnyFn profile_get_events;
  AnyFn profile_get_sub_events;
  AnyFn profile_get_event_data;
  AnyFn profile_get_extended_event_data;
  AnyFn profile_free;
  AnyFn mem_register;
  AnyFn mem_de_register;
  AnyFn device_get_platform_info;
  AnyFn device_free_platform_info;
  AnyFn device_get_infrastructure;
  DeviceCreateFn device_create;
  AnyFn device_set_config;
  AnyFn device_get_info;
  DeviceFreeFn device_free;
};

/// QnnInterface_t: one provider of a backend library.
struct Interface {
  uint32_t backend_id;
  const char* provider_name;
  ApiVersion api_version;
  InterfaceTable fn;  // the union's only member (QNN_INTERFACE_VER_NAME)
};

/// QnnInterface_getProviders, exported by every backend library.
using GetProvidersFn = ErrorHandle (*)(const Interface*** providers, uint32_t* n_providers);
inline constexpr const char* kGetProvidersSymbol = "QnnInterface_getProviders";
/// QnnSystemInterface_getProviders, exported by libQnnSystem.so (loaded, not called yet).
inline constexpr const char* kSystemGetProvidersSymbol = "QnnSystemInterface_getProviders";

/// Op package and type names (QnnOpDef.h).
inline constexpr const char* kOpPackage = "qti.aisw";
inline constexpr const char* kOpAdd = "ElementWiseAdd";
inline constexpr const char* kOpMultiply = "ElementWiseMultiply";
inline constexpr const char* kOpFullyConnected = "FullyConnected";
inline constexpr const char* kOpRmsNorm = "RmsNorm";
inline constexpr const char* kOpReshape = "Reshape";
inline constexpr const char* kOpTranspose = "Transpose";
inline constexpr const char* kOpMatMul = "MatMul";
inline constexpr const char* kOpGather = "Gather";
inline constexpr const char* kOpSoftmax = "Softmax";
inline constexpr const char* kOpSigmoid = "Sigmoid";
inline constexpr const char* kOpTanh = "Tanh";
inline constexpr const char* kOpQuantize = "Quantize";      // float -> fixed point
inline constexpr const char* kOpDequantize = "Dequantize";  // fixed point -> float
inline constexpr const char* kOpConvert = "Convert";        // between encodings / types
inline constexpr const char* kParamEpsilon = "epsilon";
inline constexpr const char* kParamAxes = "axes";
inline constexpr const char* kParamAxis = "axis";  // Gather (int32), Softmax (uint32)
inline constexpr const char* kParamBeta = "beta";  // Softmax: softmax(beta * x)
inline constexpr const char* kParamPerm = "perm";  // Transpose (uint32 tensor)
inline constexpr const char* kParamTransposeIn0 = "transpose_in0";  // MatMul (bool)
inline constexpr const char* kParamTransposeIn1 = "transpose_in1";

}  // namespace geniex::npu_qnn::api
