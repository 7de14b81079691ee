// generate / chat / applyChatTemplate. The engine calls the TokenCallback on the calling thread,
// so the listener is invoked right here with this thread's JNIEnv: one byte[] per piece (deleted
// after the call), and an exception thrown by the listener stops the generation and is left
// pending, so Java rethrows it once the native method returns.
#include <chrono>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "jni_natives.h"
#include "jni_util.h"

namespace geniex::jni {
namespace {

// Indices of GenerationConfig's packed fields (dev.geniex.GenerationConfig#ints / #floats).
enum CfgInt {
  kMaxTokens,
  kTopK,
  kPenaltyLastN,
  kIgnoreEos,
  kParseSpecial,
  kAddSpecial,
  kHasSeed,
  kIntCount
};
enum CfgFloat { kTemperature, kTopP, kMinP, kRepetition, kPresence, kFrequency, kFloatCount };

bool read_config(JNIEnv* env, jintArray ints, jfloatArray floats, jlong seed, jobjectArray stops,
                 jbyteArray schema, jlong cancel, GenerationConfig& c) {
  const std::vector<int32_t> i = to_ints(env, ints);
  std::vector<float> f(kFloatCount);
  if (i.size() != kIntCount || floats == nullptr || env->GetArrayLength(floats) != kFloatCount) {
    throw_illegal_argument(env, "generation config: wrong number of packed fields");
    return false;
  }
  env->GetFloatArrayRegion(floats, 0, kFloatCount, f.data());
  c.max_tokens = i[kMaxTokens];
  c.top_k = i[kTopK];
  c.penalty_last_n = i[kPenaltyLastN];
  c.ignore_eos = i[kIgnoreEos] != 0;
  c.parse_special = i[kParseSpecial] != 0;
  c.add_special = i[kAddSpecial] != 0;
  if (i[kHasSeed] != 0) c.seed = static_cast<uint64_t>(seed);
  c.temperature = f[kTemperature];
  c.top_p = f[kTopP];
  c.min_p = f[kMinP];
  c.repetition_penalty = f[kRepetition];
  c.presence_penalty = f[kPresence];
  c.frequency_penalty = f[kFrequency];
  c.stop = to_strings(env, stops);
  c.json_schema = to_string(env, schema);
  if (cancel != 0) {
    c.cancel = reinterpret_cast<CancelHandle*>(static_cast<intptr_t>(cancel))->token;
  }
  return true;
}

// Images of generate(): element k is a path (image_paths[k] non-null) or encoded bytes.
std::vector<Image> read_images(JNIEnv* env, jobjectArray paths, jobjectArray bytes) {
  std::vector<Image> out;
  if (paths == nullptr) return out;
  const jsize n = env->GetArrayLength(paths);
  for (jsize k = 0; k < n; ++k) {
    auto p = static_cast<jbyteArray>(env->GetObjectArrayElement(paths, k));
    if (p != nullptr) {
      out.push_back(Image::from_file(to_string(env, p)));
      env->DeleteLocalRef(p);
      continue;
    }
    auto b = static_cast<jbyteArray>(env->GetObjectArrayElement(bytes, k));
    out.push_back(Image::from_bytes(to_byte_vector(env, b)));
    env->DeleteLocalRef(b);
  }
  return out;
}

// Chat messages flattened by dev.geniex.ChatMessages: per message a role and a content, and
// part_counts[m] parts (0: the plain content). Part types: 0 text (part_texts), 1 image by path
// (part_texts), 2 image by bytes (part_bytes).
bool read_messages(JNIEnv* env, jobjectArray roles, jobjectArray contents, jintArray part_counts,
                   jintArray part_types, jobjectArray part_texts, jobjectArray part_bytes,
                   std::vector<ChatMessage>& out) {
  const std::vector<std::string> r = to_strings(env, roles);
  std::vector<std::string> c = to_strings(env, contents);
  const std::vector<int32_t> counts = to_ints(env, part_counts);
  const std::vector<int32_t> types = to_ints(env, part_types);
  std::vector<std::string> texts = to_strings(env, part_texts);
  if (c.size() != r.size() || counts.size() != r.size() || texts.size() != types.size()) {
    throw_illegal_argument(env, "chat messages: inconsistent arrays");
    return false;
  }
  size_t part = 0;
  for (size_t m = 0; m < r.size(); ++m) {
    ChatMessage msg;
    msg.role = r[m];
    msg.content = std::move(c[m]);
    for (int32_t k = 0; k < counts[m]; ++k, ++part) {
      if (part >= types.size()) {
        throw_illegal_argument(env, "chat messages: inconsistent part counts");
        return false;
      }
      if (types[part] == 0) {
        msg.parts.push_back(ContentPart::text_part(std::move(texts[part])));
      } else if (types[part] == 1) {
        msg.parts.push_back(ContentPart::image_part(Image::from_file(std::move(texts[part]))));
      } else {
        auto b = static_cast<jbyteArray>(
            env->GetObjectArrayElement(part_bytes, static_cast<jsize>(part)));
        msg.parts.push_back(ContentPart::image_part(Image::from_bytes(to_byte_vector(env, b))));
        env->DeleteLocalRef(b);
      }
    }
    out.push_back(std::move(msg));
  }
  return true;
}

// The callback that hands each piece to the Java listener on this thread.
TokenCallback listener_callback(JNIEnv* env, jobject listener) {
  if (listener == nullptr) return {};
  return [env, listener](std::string_view text, int32_t token) -> bool {
    if (env->ExceptionCheck()) return false;
    jbyteArray b = to_bytes(env, text);
    if (b == nullptr) return false;  // OutOfMemoryError pending: stop, Java rethrows it
    const jboolean go_on = env->CallBooleanMethod(listener, cache().on_token, b, token);
    env->DeleteLocalRef(b);
    if (env->ExceptionCheck()) return false;  // left pending: Java rethrows the listener's error
    return go_on == JNI_TRUE;
  };
}

// The Java Generation for a result, or nullptr with an exception pending.
jobject to_java(JNIEnv* env, Result<Generation>&& r) {
  if (env->ExceptionCheck()) return nullptr;  // the listener threw: that exception wins
  if (!r.ok()) {
    throw_status(env, r.status());
    return nullptr;
  }
  const Generation& g = *r;
  jbyteArray text = to_bytes(env, g.text);
  if (text == nullptr) return nullptr;
  jintArray prompt = to_jints(env, g.prompt_tokens);
  if (prompt == nullptr) return nullptr;
  jintArray tokens = to_jints(env, g.tokens);
  if (tokens == nullptr) return nullptr;
  const Timings& t = g.timings;
  const jdouble tv[] = {static_cast<double>(t.prompt_tokens),
                        static_cast<double>(t.cached_tokens),
                        static_cast<double>(t.generated_tokens),
                        t.prompt_ms,
                        t.generation_ms,
                        t.ttft_ms};
  jdoubleArray timings = env->NewDoubleArray(6);
  if (timings == nullptr) return nullptr;
  env->SetDoubleArrayRegion(timings, 0, 6, tv);
  return env->NewObject(cache().generation, cache().generation_ctor, text, prompt, tokens,
                        static_cast<jint>(g.stop_reason), timings, static_cast<jlong>(g.seed));
}

}  // namespace

jobject native_generate(JNIEnv* env, jclass, jlong model, jbyteArray prompt, jintArray tokens,
                        jobjectArray image_paths, jobjectArray image_bytes, jintArray cfg_ints,
                        jfloatArray cfg_floats, jlong seed, jobjectArray stops, jbyteArray schema,
                        jlong cancel, jobject listener) {
  return guarded(env, static_cast<jobject>(nullptr), [&]() -> jobject {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    GenerationConfig cfg;
    if (!read_config(env, cfg_ints, cfg_floats, seed, stops, schema, cancel, cfg)) return nullptr;
    const TokenCallback cb = listener_callback(env, listener);
    if (prompt == nullptr) {
      const std::vector<int32_t> ids = to_ints(env, tokens);
      return to_java(env, m->generate(std::span<const int32_t>(ids), cfg, cb));
    }
    const std::string text = to_string(env, prompt);
    const std::vector<Image> images = read_images(env, image_paths, image_bytes);
    if (images.empty()) return to_java(env, m->generate(std::string_view(text), cfg, cb));
    return to_java(env,
                   m->generate(std::string_view(text), std::span<const Image>(images), cfg, cb));
  });
}

jobject native_chat(JNIEnv* env, jclass, jlong model, jobjectArray roles, jobjectArray contents,
                    jintArray part_counts, jintArray part_types, jobjectArray part_texts,
                    jobjectArray part_bytes, jintArray cfg_ints, jfloatArray cfg_floats, jlong seed,
                    jobjectArray stops, jbyteArray schema, jlong cancel, jobject listener) {
  return guarded(env, static_cast<jobject>(nullptr), [&]() -> jobject {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    GenerationConfig cfg;
    if (!read_config(env, cfg_ints, cfg_floats, seed, stops, schema, cancel, cfg)) return nullptr;
    std::vector<ChatMessage> msgs;
    if (!read_messages(env, roles, contents, part_counts, part_types, part_texts, part_bytes,
                       msgs)) {
      return nullptr;
    }
    return to_java(
        env, m->chat(std::span<const ChatMessage>(msgs), cfg, listener_callback(env, listener)));
  });
}

jbyteArray native_apply_chat_template(JNIEnv* env, jclass, jlong model, jobjectArray roles,
                                      jobjectArray contents, jintArray part_counts,
                                      jintArray part_types, jobjectArray part_texts,
                                      jobjectArray part_bytes, jboolean add_generation_prompt) {
  return guarded(env, static_cast<jbyteArray>(nullptr), [&]() -> jbyteArray {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    std::vector<ChatMessage> msgs;
    if (!read_messages(env, roles, contents, part_counts, part_types, part_texts, part_bytes,
                       msgs)) {
      return nullptr;
    }
    auto r = m->apply_chat_template(std::span<const ChatMessage>(msgs),
                                    add_generation_prompt == JNI_TRUE);
    if (!r.ok()) {
      throw_status(env, r.status());
      return nullptr;
    }
    return to_bytes(env, *r);
  });
}

jlong native_upcall_nanos(JNIEnv* env, jclass, jobject sink, jint n) {
  return guarded(env, jlong{0}, [&]() -> jlong {
    const TokenCallback cb = listener_callback(env, sink);
    const std::string piece = " token";  // a typical piece: a space and a word
    const auto t0 = std::chrono::steady_clock::now();
    for (jint i = 0; i < n; ++i) {
      if (!cb(piece, 42)) break;
    }
    const auto t1 = std::chrono::steady_clock::now();
    return static_cast<jlong>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  });
}

}  // namespace geniex::jni
