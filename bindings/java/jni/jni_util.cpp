#include "jni_util.h"

namespace geniex::jni {

Cache& cache() {
  static Cache c;
  return c;
}

std::shared_ptr<Model> model_of(JNIEnv* env, jlong handle) {
  auto* h = reinterpret_cast<ModelHandle*>(static_cast<intptr_t>(handle));
  if (h == nullptr || !h->model) {
    env->ThrowNew(cache().illegal_state, "the model is closed");
    return nullptr;
  }
  return h->model;
}

std::string to_string(JNIEnv* env, jbyteArray bytes) {
  if (bytes == nullptr) return {};
  const jsize n = env->GetArrayLength(bytes);
  std::string out(static_cast<size_t>(n), '\0');
  if (n > 0) env->GetByteArrayRegion(bytes, 0, n, reinterpret_cast<jbyte*>(out.data()));
  return out;
}

std::vector<uint8_t> to_byte_vector(JNIEnv* env, jbyteArray bytes) {
  if (bytes == nullptr) return {};
  const jsize n = env->GetArrayLength(bytes);
  std::vector<uint8_t> out(static_cast<size_t>(n));
  if (n > 0) env->GetByteArrayRegion(bytes, 0, n, reinterpret_cast<jbyte*>(out.data()));
  return out;
}

std::vector<std::string> to_strings(JNIEnv* env, jobjectArray arrays) {
  std::vector<std::string> out;
  if (arrays == nullptr) return out;
  const jsize n = env->GetArrayLength(arrays);
  out.reserve(static_cast<size_t>(n));
  for (jsize i = 0; i < n; ++i) {
    auto b = static_cast<jbyteArray>(env->GetObjectArrayElement(arrays, i));
    out.push_back(to_string(env, b));
    env->DeleteLocalRef(b);
  }
  return out;
}

std::vector<int32_t> to_ints(JNIEnv* env, jintArray ints) {
  if (ints == nullptr) return {};
  const jsize n = env->GetArrayLength(ints);
  std::vector<int32_t> out(static_cast<size_t>(n));
  if (n > 0) env->GetIntArrayRegion(ints, 0, n, reinterpret_cast<jint*>(out.data()));
  return out;
}

jbyteArray to_bytes(JNIEnv* env, std::string_view text) {
  const auto n = static_cast<jsize>(text.size());
  jbyteArray b = env->NewByteArray(n);
  if (b != nullptr && n > 0) {
    env->SetByteArrayRegion(b, 0, n, reinterpret_cast<const jbyte*>(text.data()));
  }
  return b;
}

jintArray to_jints(JNIEnv* env, const std::vector<int32_t>& ints) {
  const auto n = static_cast<jsize>(ints.size());
  jintArray a = env->NewIntArray(n);
  if (a != nullptr && n > 0)
    env->SetIntArrayRegion(a, 0, n, reinterpret_cast<const jint*>(ints.data()));
  return a;
}

void throw_status(JNIEnv* env, const Status& status) {
  if (env->ExceptionCheck()) return;
  jbyteArray msg = to_bytes(env, status.message());
  if (msg == nullptr) return;  // OutOfMemoryError pending
  auto ex = static_cast<jthrowable>(env->NewObject(cache().exception, cache().exception_ctor,
                                                   static_cast<jint>(status.code()), msg));
  env->DeleteLocalRef(msg);
  if (ex != nullptr) {
    env->Throw(ex);
    env->DeleteLocalRef(ex);
  }
}

void throw_illegal_argument(JNIEnv* env, const char* message) {
  if (!env->ExceptionCheck()) env->ThrowNew(cache().illegal_argument, message);
}

}  // namespace geniex::jni
