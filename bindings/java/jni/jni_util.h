// Shared helpers of the JNI library: the classes and methods cached in JNI_OnLoad, UTF-8 text as
// byte arrays both ways (never modified UTF-8: emoji must survive), engine Status -> a thrown
// dev.geniex.GenieXException, and the guard that keeps C++ exceptions out of the JVM.
#pragma once

#include <jni.h>

#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex::jni {

/// Global references and ids looked up once in JNI_OnLoad (a later FindClass on an app thread
/// would see the system class loader on Android).
struct Cache {
  jclass generation = nullptr;  ///< dev.geniex.Generation
  jmethodID generation_ctor = nullptr;
  jclass exception = nullptr;  ///< dev.geniex.GenieXException
  jmethodID exception_ctor = nullptr;
  jclass model_info = nullptr;  ///< dev.geniex.ModelInfo
  jmethodID model_info_ctor = nullptr;
  jclass listener = nullptr;  ///< dev.geniex.PieceSink
  jmethodID on_token = nullptr;
  jclass illegal_state = nullptr;  ///< java.lang.IllegalStateException
  jclass illegal_argument = nullptr;
  jclass out_of_memory = nullptr;  ///< java.lang.OutOfMemoryError
  jclass runtime = nullptr;        ///< java.lang.RuntimeException
  jclass byte_array = nullptr;     ///< byte[]
};
Cache& cache();

/// Log lines of a model (ModelBuilder::with_log may call from engine threads): queued here and
/// handed to Java's logger on the calling thread after each call (nothing attaches to the JVM).
class LogQueue {
 public:
  static constexpr size_t kMaxLines = 1000;  ///< oldest lines are dropped beyond this
  void push(std::string_view line) {
    std::lock_guard<std::mutex> lock(mu_);
    if (lines_.size() == kMaxLines) lines_.pop_front();
    lines_.emplace_back(line);
  }
  std::deque<std::string> take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(lines_, {});
  }

 private:
  std::mutex mu_;
  std::deque<std::string> lines_;
};

/// What a Model handle (a jlong) points to. Java's Model guards its lifetime (close() waits
/// for every call); each call still takes its own reference.
struct ModelHandle {
  std::shared_ptr<Model> model;
  std::shared_ptr<LogQueue> log;  ///< null without a logger
};
/// The model behind `handle`, or nullptr with IllegalStateException thrown.
std::shared_ptr<Model> model_of(JNIEnv* env, jlong handle);

/// A per-call CancelToken shared by Java (GenerationTask.cancel, Model.close) and the engine.
struct CancelHandle {
  std::shared_ptr<CancelToken> token = std::make_shared<CancelToken>();
};

/// The bytes of a byte[] (UTF-8 text from String.getBytes(UTF_8)); "" for null.
std::string to_string(JNIEnv* env, jbyteArray bytes);
/// The elements of a byte[][] (null elements become "").
std::vector<std::string> to_strings(JNIEnv* env, jobjectArray arrays);
std::vector<uint8_t> to_byte_vector(JNIEnv* env, jbyteArray bytes);
std::vector<int32_t> to_ints(JNIEnv* env, jintArray ints);
/// A new byte[] holding `text`; nullptr with OutOfMemoryError pending when the JVM refuses.
jbyteArray to_bytes(JNIEnv* env, std::string_view text);
jintArray to_jints(JNIEnv* env, const std::vector<int32_t>& ints);

/// Throws dev.geniex.GenieXException(code, message) for a failed Status.
void throw_status(JNIEnv* env, const Status& status);
void throw_illegal_argument(JNIEnv* env, const char* message);

/// Runs `body`, turning a C++ exception into a Java one (nothing unwinds into the JVM).
template <typename R, typename F>
R guarded(JNIEnv* env, R fallback, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    if (!env->ExceptionCheck()) env->ThrowNew(cache().out_of_memory, "geniex: out of memory");
  } catch (const std::exception& e) {
    if (!env->ExceptionCheck()) env->ThrowNew(cache().runtime, e.what());
  } catch (...) {
    if (!env->ExceptionCheck()) env->ThrowNew(cache().runtime, "geniex: unknown C++ exception");
  }
  return fallback;
}

}  // namespace geniex::jni
