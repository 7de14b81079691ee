// libgeniex_jni without a JVM: a shim JavaVM/JNIEnv (only the functions the library uses, with
// CheckJNI's main rule: no JNI call but the exception-safe ones while an exception is pending)
// loads the library through JNI_OnLoad, takes the natives it registers and calls them as
// dev.geniex.NativeBridge would. Runs natively and, in the aarch64 preset, under qemu-aarch64:
// the cross-built JNI library exercised on its target ISA.
#include <gtest/gtest.h>
#include <jni.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"

extern "C" jint JNI_OnLoad(JavaVM* vm, void* reserved);

namespace {

// ---- fake Java objects -------------------------------------------------------------------
struct Owned {
  virtual ~Owned() = default;
};
struct FakeClass : _jclass, Owned {
  std::string name;
};
struct Bytes : _jbyteArray, Owned {
  std::vector<jbyte> v;
  [[nodiscard]] std::string str() const { return std::string(v.begin(), v.end()); }
};
struct Ints : _jintArray, Owned {
  std::vector<jint> v;
};
struct Longs : _jlongArray, Owned {
  std::vector<jlong> v;
};
struct Floats : _jfloatArray, Owned {
  std::vector<jfloat> v;
};
struct Doubles : _jdoubleArray, Owned {
  std::vector<jdouble> v;
};
struct Objects : _jobjectArray, Owned {
  std::vector<jobject> v;
};
struct Throwable : _jthrowable, Owned {
  std::string cls;
  int code = -1;  // GenieXException's StatusCode ordinal
  std::string message;
};
struct GenerationObj : _jobject, Owned {
  std::string text;
  std::vector<jint> prompt, tokens;
  jint stop = -1;
  std::vector<jdouble> timings;
};
struct InfoObj : _jobject, Owned {
  std::vector<std::string> strings;
  std::vector<jlong> numbers;
};
struct Sink : _jobject, Owned {
  std::function<bool(const std::string&, jint)> fn;
};

// ---- the shim's state ----------------------------------------------------------------------
struct Shim {
  std::vector<std::unique_ptr<Owned>> heap;
  std::map<std::string, FakeClass*> classes;
  std::map<std::string, JNINativeMethod> natives;
  std::map<std::string, std::string> method_names;  // jmethodID (as text) -> "Class.name(sig)"
  std::vector<std::string> violations;
  Throwable* pending = nullptr;
  int local_deletes = 0;
  int byte_arrays = 0;
  std::map<const _jobject*, jsize> lengths;  // every array the shim made

  template <typename T>
  T* make() {
    auto p = std::make_unique<T>();
    T* raw = p.get();
    heap.push_back(std::move(p));
    return raw;
  }
  template <typename T>
  T* array(size_t n) {
    T* a = make<T>();
    lengths[static_cast<const _jobject*>(a)] = static_cast<jsize>(n);
    return a;
  }
  void check(const char* fn) {
    if (pending != nullptr) violations.push_back(std::string(fn) + " with an exception pending");
  }
};
Shim* g_shim = nullptr;

// Method ids: addresses of these markers.
char kGenerationCtor, kExceptionCtor, kInfoCtor, kOnToken, kUnknownMethod;

jclass JNICALL find_class(JNIEnv*, const char* name) {
  g_shim->check("FindClass");
  auto& c = g_shim->classes[name];
  if (c == nullptr) {
    c = g_shim->make<FakeClass>();
    c->name = name;
  }
  return c;
}
jobject JNICALL new_global_ref(JNIEnv*, jobject o) { return o; }
void JNICALL delete_local_ref(JNIEnv*, jobject) { ++g_shim->local_deletes; }
jboolean JNICALL exception_check(JNIEnv*) { return g_shim->pending ? JNI_TRUE : JNI_FALSE; }
jint JNICALL throw_(JNIEnv*, jthrowable t) {
  g_shim->pending = static_cast<Throwable*>(t);
  return 0;
}
jint JNICALL throw_new(JNIEnv*, jclass c, const char* msg) {
  g_shim->check("ThrowNew");
  auto* t = g_shim->make<Throwable>();
  t->cls = static_cast<FakeClass*>(c)->name;
  t->message = msg;
  g_shim->pending = t;
  return 0;
}
jmethodID JNICALL get_method_id(JNIEnv*, jclass c, const char* name, const char* sig) {
  g_shim->check("GetMethodID");
  const std::string key = static_cast<FakeClass*>(c)->name + "." + name + sig;
  char* id = &kUnknownMethod;
  if (key == "dev/geniex/Generation.<init>([B[I[II[DJ)V") id = &kGenerationCtor;
  if (key == "dev/geniex/GenieXException.<init>(I[B)V") id = &kExceptionCtor;
  if (key == "dev/geniex/ModelInfo.<init>([[B[J)V") id = &kInfoCtor;
  if (key == "dev/geniex/PieceSink.onToken([BI)Z") id = &kOnToken;
  return id == &kUnknownMethod ? nullptr : reinterpret_cast<jmethodID>(id);
}
jint JNICALL register_natives(JNIEnv*, jclass c, const JNINativeMethod* m, jint n) {
  g_shim->check("RegisterNatives");
  EXPECT_EQ(static_cast<FakeClass*>(c)->name, "dev/geniex/NativeBridge");
  for (jint i = 0; i < n; ++i) g_shim->natives[m[i].name] = m[i];
  return JNI_OK;
}
jsize JNICALL get_array_length(JNIEnv*, jarray a) {
  g_shim->check("GetArrayLength");
  auto it = g_shim->lengths.find(static_cast<const _jobject*>(a));
  if (it == g_shim->lengths.end()) {
    g_shim->violations.emplace_back("GetArrayLength on something that is not an array");
    return 0;
  }
  return it->second;
}
template <typename T, typename A>
T* as(A a) {
  return static_cast<T*>(a);
}
jbyteArray JNICALL new_byte_array(JNIEnv*, jsize n) {
  g_shim->check("NewByteArray");
  ++g_shim->byte_arrays;
  auto* b = g_shim->array<Bytes>(static_cast<size_t>(n));
  b->v.resize(static_cast<size_t>(n));
  return b;
}
void JNICALL get_byte_region(JNIEnv*, jbyteArray a, jsize s, jsize n, jbyte* out) {
  g_shim->check("GetByteArrayRegion");
  std::memcpy(out, as<Bytes>(a)->v.data() + s, static_cast<size_t>(n));
}
void JNICALL set_byte_region(JNIEnv*, jbyteArray a, jsize s, jsize n, const jbyte* in) {
  g_shim->check("SetByteArrayRegion");
  std::memcpy(as<Bytes>(a)->v.data() + s, in, static_cast<size_t>(n));
}
jintArray JNICALL new_int_array(JNIEnv*, jsize n) {
  g_shim->check("NewIntArray");
  auto* x = g_shim->array<Ints>(static_cast<size_t>(n));
  x->v.resize(static_cast<size_t>(n));
  return x;
}
void JNICALL get_int_region(JNIEnv*, jintArray a, jsize s, jsize n, jint* out) {
  g_shim->check("GetIntArrayRegion");
  std::memcpy(out, as<Ints>(a)->v.data() + s, sizeof(jint) * static_cast<size_t>(n));
}
void JNICALL set_int_region(JNIEnv*, jintArray a, jsize s, jsize n, const jint* in) {
  g_shim->check("SetIntArrayRegion");
  std::memcpy(as<Ints>(a)->v.data() + s, in, sizeof(jint) * static_cast<size_t>(n));
}
jlongArray JNICALL new_long_array(JNIEnv*, jsize n) {
  g_shim->check("NewLongArray");
  auto* x = g_shim->array<Longs>(static_cast<size_t>(n));
  x->v.resize(static_cast<size_t>(n));
  return x;
}
void JNICALL set_long_region(JNIEnv*, jlongArray a, jsize s, jsize n, const jlong* in) {
  g_shim->check("SetLongArrayRegion");
  std::memcpy(as<Longs>(a)->v.data() + s, in, sizeof(jlong) * static_cast<size_t>(n));
}
void JNICALL get_float_region(JNIEnv*, jfloatArray a, jsize s, jsize n, jfloat* out) {
  g_shim->check("GetFloatArrayRegion");
  std::memcpy(out, as<Floats>(a)->v.data() + s, sizeof(jfloat) * static_cast<size_t>(n));
}
jdoubleArray JNICALL new_double_array(JNIEnv*, jsize n) {
  g_shim->check("NewDoubleArray");
  auto* x = g_shim->array<Doubles>(static_cast<size_t>(n));
  x->v.resize(static_cast<size_t>(n));
  return x;
}
void JNICALL set_double_region(JNIEnv*, jdoubleArray a, jsize s, jsize n, const jdouble* in) {
  g_shim->check("SetDoubleArrayRegion");
  std::memcpy(as<Doubles>(a)->v.data() + s, in, sizeof(jdouble) * static_cast<size_t>(n));
}
jobjectArray JNICALL new_object_array(JNIEnv*, jsize n, jclass, jobject init) {
  g_shim->check("NewObjectArray");
  auto* x = g_shim->array<Objects>(static_cast<size_t>(n));
  x->v.assign(static_cast<size_t>(n), init);
  return x;
}
jobject JNICALL get_object_element(JNIEnv*, jobjectArray a, jsize i) {
  g_shim->check("GetObjectArrayElement");
  return as<Objects>(a)->v.at(static_cast<size_t>(i));
}
void JNICALL set_object_element(JNIEnv*, jobjectArray a, jsize i, jobject o) {
  g_shim->check("SetObjectArrayElement");
  as<Objects>(a)->v.at(static_cast<size_t>(i)) = o;
}
jobject JNICALL new_object_v(JNIEnv*, jclass, jmethodID id, va_list args) {
  g_shim->check("NewObjectV");
  const char* m = reinterpret_cast<const char*>(id);
  if (m == &kGenerationCtor) {
    auto* g = g_shim->make<GenerationObj>();
    g->text = as<Bytes>(va_arg(args, jbyteArray))->str();
    g->prompt = as<Ints>(va_arg(args, jintArray))->v;
    g->tokens = as<Ints>(va_arg(args, jintArray))->v;
    g->stop = va_arg(args, jint);
    g->timings = as<Doubles>(va_arg(args, jdoubleArray))->v;
    (void)va_arg(args, jlong);
    return g;
  }
  if (m == &kExceptionCtor) {
    auto* t = g_shim->make<Throwable>();
    t->cls = "dev/geniex/GenieXException";
    t->code = va_arg(args, jint);
    t->message = as<Bytes>(va_arg(args, jbyteArray))->str();
    return t;
  }
  if (m == &kInfoCtor) {
    auto* info = g_shim->make<InfoObj>();
    for (jobject b : as<Objects>(va_arg(args, jobjectArray))->v) {
      info->strings.push_back(as<Bytes>(b)->str());
    }
    info->numbers = as<Longs>(va_arg(args, jlongArray))->v;
    return info;
  }
  g_shim->violations.emplace_back("NewObjectV with an unknown constructor");
  return nullptr;
}
jboolean JNICALL call_boolean_v(JNIEnv*, jobject o, jmethodID id, va_list args) {
  g_shim->check("CallBooleanMethodV");
  if (reinterpret_cast<const char*>(id) != &kOnToken) {
    g_shim->violations.emplace_back("CallBooleanMethodV on an unknown method");
    return JNI_FALSE;
  }
  const std::string text = as<Bytes>(va_arg(args, jbyteArray))->str();
  const jint token = va_arg(args, jint);
  return as<Sink>(o)->fn(text, token) ? JNI_TRUE : JNI_FALSE;
}

}  // namespace

namespace {

// ---- the environment and helpers -----------------------------------------------------------
class JniShim : public ::testing::Test {
 protected:
  void SetUp() override {
    shim_ = std::make_unique<Shim>();
    g_shim = shim_.get();
    fns_ = {};
    fns_.FindClass = find_class;
    fns_.NewGlobalRef = new_global_ref;
    fns_.DeleteLocalRef = delete_local_ref;
    fns_.ExceptionCheck = exception_check;
    fns_.Throw = throw_;
    fns_.ThrowNew = throw_new;
    fns_.GetMethodID = get_method_id;
    fns_.RegisterNatives = register_natives;
    fns_.GetArrayLength = get_array_length;
    fns_.NewByteArray = new_byte_array;
    fns_.GetByteArrayRegion = get_byte_region;
    fns_.SetByteArrayRegion = set_byte_region;
    fns_.NewIntArray = new_int_array;
    fns_.GetIntArrayRegion = get_int_region;
    fns_.SetIntArrayRegion = set_int_region;
    fns_.NewLongArray = new_long_array;
    fns_.SetLongArrayRegion = set_long_region;
    fns_.GetFloatArrayRegion = get_float_region;
    fns_.NewDoubleArray = new_double_array;
    fns_.SetDoubleArrayRegion = set_double_region;
    fns_.NewObjectArray = new_object_array;
    fns_.GetObjectArrayElement = get_object_element;
    fns_.SetObjectArrayElement = set_object_element;
    fns_.NewObjectV = new_object_v;
    fns_.CallBooleanMethodV = call_boolean_v;
    env_.functions = &fns_;
    vm_fns_ = {};
    vm_fns_.GetEnv = [](JavaVM*, void** out, jint) -> jint {
      *out = current_env;
      return JNI_OK;
    };
    vm_.functions = &vm_fns_;
    current_env = &env_;
    ASSERT_EQ(JNI_OnLoad(&vm_, nullptr), JNI_VERSION_1_6);
  }
  void TearDown() override {
    EXPECT_TRUE(shim_->violations.empty()) << shim_->violations.front();
    g_shim = nullptr;
  }

  template <typename Fn>
  Fn native(const std::string& name, const std::string& sig) {
    auto it = shim_->natives.find(name);
    EXPECT_NE(it, shim_->natives.end()) << name;
    EXPECT_EQ(std::string(it->second.signature), sig) << name;
    return reinterpret_cast<Fn>(it->second.fnPtr);
  }
  jbyteArray bytes(const std::string& s) {
    auto* b = shim_->array<Bytes>(s.size());
    b->v.assign(s.begin(), s.end());
    return b;
  }
  jintArray ints(const std::vector<jint>& v) {
    auto* x = shim_->array<Ints>(v.size());
    x->v = v;
    return x;
  }
  jfloatArray floats(const std::vector<jfloat>& v) {
    auto* x = shim_->array<Floats>(v.size());
    x->v = v;
    return x;
  }
  jobjectArray byte_arrays(const std::vector<std::string>& v) {
    auto* x = shim_->array<Objects>(v.size());
    for (const auto& s : v) x->v.push_back(bytes(s));
    return x;
  }
  Throwable* take_exception() {
    Throwable* t = shim_->pending;
    shim_->pending = nullptr;
    return t;
  }

  using Load = jlong (*)(JNIEnv*, jclass, jbyteArray, jint, jintArray, jbyteArray, jbyteArray);
  using Free = void (*)(JNIEnv*, jclass, jlong);
  using Generate = jobject (*)(JNIEnv*, jclass, jlong, jbyteArray, jintArray, jobjectArray,
                               jobjectArray, jintArray, jfloatArray, jlong, jobjectArray,
                               jbyteArray, jlong, jobject);
  static constexpr const char* kGenerateSig =
      "(J[B[I[[B[[B[I[FJ[[B[BJLdev/geniex/PieceSink;)Ldev/geniex/Generation;";

  jlong load(const std::string& path) {
    auto fn = native<Load>("load", "([BI[I[B[B)J");
    return fn(&env_, nullptr, bytes(path), /*CPU*/ 1, ints({256, 1, 512, 2, 0, 0, 0, -1}),
              bytes(""), bytes(""));
  }
  // Greedy generation of `n` tokens (GenerationConfig's packed fields, jni_generate.cpp).
  GenerationObj* generate(jlong model, const std::string& prompt, int n, Sink* sink,
                          jlong cancel = 0) {
    auto fn = native<Generate>("generate", kGenerateSig);
    jobject g = fn(&env_, nullptr, model, bytes(prompt), nullptr, nullptr, nullptr,
                   ints({n, 40, 64, 0, 0, 1, 0}), floats({0.0f, 0.95f, 0.05f, 1, 0, 0}), 0,
                   byte_arrays({}), bytes(""), cancel, sink);
    return g == nullptr ? nullptr : static_cast<GenerationObj*>(g);
  }

  static std::string tiny() {
    const char* root = std::getenv("GENIEX_SOURCE_DIR");
    return std::string(root ? root : ".") + "/tests/data/models/tiny-llama-q8_0.gguf";
  }

  static JNIEnv* current_env;
  std::unique_ptr<Shim> shim_;
  JNINativeInterface_ fns_{};
  JNIEnv env_{};
  JNIInvokeInterface_ vm_fns_{};
  JavaVM vm_{};
};
JNIEnv* JniShim::current_env = nullptr;

TEST_F(JniShim, OnLoadRegistersEveryNative) {
  for (const char* name :
       {"load", "free", "tokenize", "detokenize", "reset", "saveState", "loadState", "engineStats",
        "info", "newCancel", "cancel", "freeCancel", "generate", "chat", "applyChatTemplate",
        "upcallNanos", "logits", "drainLog"}) {
    EXPECT_TRUE(shim_->natives.count(name)) << name;
  }
  EXPECT_EQ(shim_->natives.size(), 18u);
}

TEST_F(JniShim, GenerateEqualsTheEngineAndPiecesCrossAsBytes) {
  auto want = geniex::ModelBuilder(tiny())
                  .with_device(geniex::Device::cpu())
                  .with_threads(1)
                  .with_context_size(256)
                  .build();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  geniex::GenerationConfig cfg;
  cfg.max_tokens = 12;
  cfg.temperature = 0;
  auto ref = want->generate("Hello world, this is", cfg);
  ASSERT_TRUE(ref.ok());

  const jlong model = load(tiny());
  ASSERT_NE(model, 0);
  Sink* sink = shim_->make<Sink>();
  std::string pieces;
  int calls = 0;
  sink->fn = [&](const std::string& text, jint) {
    pieces += text;
    ++calls;
    return true;
  };
  const int deletes_before = shim_->local_deletes;
  GenerationObj* g = generate(model, "Hello world, this is", 12, sink);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->tokens, std::vector<jint>(ref->tokens.begin(), ref->tokens.end()));
  EXPECT_EQ(g->prompt, std::vector<jint>(ref->prompt_tokens.begin(), ref->prompt_tokens.end()));
  EXPECT_EQ(g->text, ref->text);
  EXPECT_EQ(pieces, g->text);
  EXPECT_EQ(g->stop, 1);  // MAX_TOKENS
  // One byte[] per piece, each freed after its upcall.
  EXPECT_GE(shim_->local_deletes - deletes_before, calls);
  native<Free>("free", "(J)V")(&env_, nullptr, model);
}

TEST_F(JniShim, Utf8RoundTripsThroughTheTokenizer) {
  const jlong model = load(tiny());
  ASSERT_NE(model, 0);
  using Tokenize = jintArray (*)(JNIEnv*, jclass, jlong, jbyteArray, jboolean, jboolean);
  using Detokenize = jbyteArray (*)(JNIEnv*, jclass, jlong, jintArray);
  const std::string text =
      "na\xc3\xafve \xf0\x9f\x98\x80 \xe4\xbd\xa0\xe5\xa5\xbd";  // naïve 😀 你好
  jintArray ids = native<Tokenize>("tokenize", "(J[BZZ)[I")(&env_, nullptr, model, bytes(text),
                                                            JNI_FALSE, JNI_FALSE);
  ASSERT_NE(ids, nullptr);
  jbyteArray back = native<Detokenize>("detokenize", "(J[I)[B")(&env_, nullptr, model, ids);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(static_cast<Bytes*>(back)->str(), text);
  native<Free>("free", "(J)V")(&env_, nullptr, model);
}

TEST_F(JniShim, AListenerExceptionStopsTheGenerationAndStaysPending) {
  const jlong model = load(tiny());
  ASSERT_NE(model, 0);
  Sink* sink = shim_->make<Sink>();
  Throwable* boom = shim_->make<Throwable>();
  boom->cls = "java/lang/IllegalStateException";
  int calls = 0;
  sink->fn = [&](const std::string&, jint) {
    if (++calls == 3) shim_->pending = boom;  // the listener threw
    return true;
  };
  EXPECT_EQ(generate(model, "Hello world, this is", 40, sink), nullptr);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(take_exception(), boom);
  // Usable afterwards.
  sink->fn = [](const std::string&, jint) { return true; };
  GenerationObj* g = generate(model, "Hello", 2, sink);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->tokens.size(), 2u);
  native<Free>("free", "(J)V")(&env_, nullptr, model);
}

TEST_F(JniShim, EngineErrorsThrowGenieXExceptionWithTheCode) {
  EXPECT_EQ(load("/no/such/model.gguf"), 0);
  Throwable* t = take_exception();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->cls, "dev/geniex/GenieXException");
  EXPECT_EQ(t->code, 2);  // NOT_FOUND
  EXPECT_NE(t->message.find("/no/such/model.gguf"), std::string::npos) << t->message;

  const jlong model = load(tiny());
  ASSERT_NE(model, 0);
  EXPECT_EQ(generate(model, "Hello", -1, nullptr), nullptr);
  t = take_exception();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->code, 1);  // INVALID_ARGUMENT
  EXPECT_EQ(t->message, "max_tokens must be >= 0, got -1");
  native<Free>("free", "(J)V")(&env_, nullptr, model);
}

TEST_F(JniShim, ACancelledTokenStopsBeforeTheFirstToken) {
  const jlong model = load(tiny());
  ASSERT_NE(model, 0);
  using NewCancel = jlong (*)(JNIEnv*, jclass);
  using Cancel = void (*)(JNIEnv*, jclass, jlong);
  const jlong cancel = native<NewCancel>("newCancel", "()J")(&env_, nullptr);
  native<Cancel>("cancel", "(J)V")(&env_, nullptr, cancel);
  GenerationObj* g = generate(model, "Hello world", 40, nullptr, cancel);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->stop, 3);  // CANCELLED
  EXPECT_TRUE(g->tokens.empty());
  native<Cancel>("freeCancel", "(J)V")(&env_, nullptr, cancel);
  native<Free>("free", "(J)V")(&env_, nullptr, model);
}

}  // namespace
