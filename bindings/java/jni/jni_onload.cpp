// JNI_OnLoad: caches the classes and method ids the natives use and registers every native of
// dev.geniex.NativeBridge by name and signature (RegisterNatives fails the load when the Java
// declarations drift from this table, instead of an UnsatisfiedLinkError at the first call).
#include <iterator>

#include "jni_natives.h"
#include "jni_util.h"

namespace geniex::jni {
namespace {

jclass global_class(JNIEnv* env, const char* name) {
  jclass local = env->FindClass(name);
  if (local == nullptr) return nullptr;
  auto global = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  return global;
}

#define GENIEX_NATIVE(name, sig, fn) \
  JNINativeMethod { const_cast<char*>(name), const_cast<char*>(sig), reinterpret_cast<void*>(fn) }

bool init(JNIEnv* env) {
  Cache& c = cache();
  if ((c.generation = global_class(env, "dev/geniex/Generation")) == nullptr) return false;
  if ((c.exception = global_class(env, "dev/geniex/GenieXException")) == nullptr) return false;
  if ((c.model_info = global_class(env, "dev/geniex/ModelInfo")) == nullptr) return false;
  if ((c.listener = global_class(env, "dev/geniex/PieceSink")) == nullptr) return false;
  if ((c.illegal_state = global_class(env, "java/lang/IllegalStateException")) == nullptr ||
      (c.illegal_argument = global_class(env, "java/lang/IllegalArgumentException")) == nullptr ||
      (c.out_of_memory = global_class(env, "java/lang/OutOfMemoryError")) == nullptr ||
      (c.runtime = global_class(env, "java/lang/RuntimeException")) == nullptr ||
      (c.byte_array = global_class(env, "[B")) == nullptr) {
    return false;
  }
  c.generation_ctor = env->GetMethodID(c.generation, "<init>", "([B[I[II[DJ)V");
  c.exception_ctor = env->GetMethodID(c.exception, "<init>", "(I[B)V");
  c.model_info_ctor = env->GetMethodID(c.model_info, "<init>", "([[B[J)V");
  c.on_token = env->GetMethodID(c.listener, "onToken", "([BI)Z");
  if (c.generation_ctor == nullptr || c.exception_ctor == nullptr || c.model_info_ctor == nullptr ||
      c.on_token == nullptr) {
    return false;
  }

  const JNINativeMethod methods[] = {
      GENIEX_NATIVE("load", "([BI[I[B[B)J", native_load),
      GENIEX_NATIVE("free", "(J)V", native_free),
      GENIEX_NATIVE("tokenize", "(J[BZZ)[I", native_tokenize),
      GENIEX_NATIVE("detokenize", "(J[I)[B", native_detokenize),
      GENIEX_NATIVE("reset", "(J)V", native_reset),
      GENIEX_NATIVE("saveState", "(J[B)V", native_save_state),
      GENIEX_NATIVE("loadState", "(J[B)V", native_load_state),
      GENIEX_NATIVE("engineStats", "(J)[J", native_engine_stats),
      GENIEX_NATIVE("info", "(J)Ldev/geniex/ModelInfo;", native_info),
      GENIEX_NATIVE("newCancel", "()J", native_new_cancel),
      GENIEX_NATIVE("cancel", "(J)V", native_cancel),
      GENIEX_NATIVE("freeCancel", "(J)V", native_free_cancel),
      GENIEX_NATIVE("generate",
                    "(J[B[I[[B[[B[I[FJ[[B[BJLdev/geniex/PieceSink;)Ldev/geniex/Generation;",
                    native_generate),
      GENIEX_NATIVE("chat",
                    "(J[[B[[B[I[I[[B[[B[I[FJ[[B[BJLdev/geniex/PieceSink;)Ldev/geniex/Generation;",
                    native_chat),
      GENIEX_NATIVE("drainLog", "(J)[[B", native_drain_log),
      GENIEX_NATIVE("logits", "(J[II)[F", native_logits),
      GENIEX_NATIVE("upcallNanos", "(Ldev/geniex/PieceSink;I)J", native_upcall_nanos),
      GENIEX_NATIVE("applyChatTemplate", "(J[[B[[B[I[I[[B[[BZ)[B", native_apply_chat_template),
  };
  jclass bridge = env->FindClass("dev/geniex/NativeBridge");
  if (bridge == nullptr) return false;
  const jint rc = env->RegisterNatives(bridge, methods, static_cast<jint>(std::size(methods)));
  env->DeleteLocalRef(bridge);
  return rc == JNI_OK;
}

#undef GENIEX_NATIVE

}  // namespace
}  // namespace geniex::jni

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* /*reserved*/) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
  try {
    return geniex::jni::init(env) ? JNI_VERSION_1_6 : JNI_ERR;
  } catch (...) {
    return JNI_ERR;
  }
}
