// Loading and freeing models, the tokenizer, state files, counters and per-call cancel tokens.
#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "jni_natives.h"
#include "jni_util.h"

namespace geniex::jni {
namespace {

// Plugins beside the JNI library (a `plugins` folder next to it or one level up, as the build
// tree and the jar extraction lay them out); "" when there is none (the engine's default).
std::string default_plugin_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&default_plugin_dir), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code ec;
  const std::filesystem::path lib_dir = std::filesystem::path(info.dli_fname).parent_path();
  for (const auto& dir : {lib_dir / "plugins", lib_dir.parent_path() / "plugins"}) {
    if (std::filesystem::is_directory(dir, ec)) return dir.string();
  }
  return {};
}

Device device_of(jint d) {
  switch (d) {
    case 1: return Device::cpu();
    case 2: return Device::gpu();
    case 3: return Device::npu();
    default: return Device::automatic();
  }
}

CancelHandle* cancel_of(jlong handle) {
  return reinterpret_cast<CancelHandle*>(static_cast<intptr_t>(handle));
}

}  // namespace

jlong native_load(JNIEnv* env, jclass, jbyteArray path, jint device, jintArray ints,
                  jbyteArray plugin_dir, jbyteArray mmproj) {
  return guarded(env, jlong{0}, [&]() -> jlong {
    const std::vector<int32_t> v = to_ints(env, ints);
    if (v.size() != 8) {
      throw_illegal_argument(env, "load: 8 integer settings expected");
      return 0;
    }
    ModelBuilder b(to_string(env, path));
    b.with_device(device_of(device))
        .with_context_size(v[0])
        .with_threads(v[1])
        .with_batch_size(v[2])
        .with_max_sequences(v[3])
        .with_deterministic(v[5] != 0)
        .with_offload_layers(v[7]);
    switch (v[4]) {
      case 1: b.with_kv_cache_type(KvCacheType::kF32); break;
      case 2: b.with_kv_cache_type(KvCacheType::kQ8_0); break;
      case 3: b.with_kv_cache_type(KvCacheType::kQ4_0); break;
      default: b.with_kv_cache_type(KvCacheType::kF16);
    }
    std::string plugins = to_string(env, plugin_dir);
    if (plugins.empty()) plugins = default_plugin_dir();
    if (!plugins.empty()) b.with_plugin_dir(std::move(plugins));
    const std::string mm = to_string(env, mmproj);
    if (!mm.empty()) b.with_mmproj(mm);
    std::shared_ptr<LogQueue> log;
    if (v[6] != 0) {
      log = std::make_shared<LogQueue>();
      b.with_log([log](std::string_view line) { log->push(line); });
    }
    Result<Model> m = b.build();
    if (!m.ok()) {
      throw_status(env, m.status());
      return 0;
    }
    auto* h = new ModelHandle{std::make_shared<Model>(std::move(*m)), std::move(log)};
    return static_cast<jlong>(reinterpret_cast<intptr_t>(h));
  });
}

void native_free(JNIEnv* env, jclass, jlong model) {
  guarded(env, 0, [&] {
    delete reinterpret_cast<ModelHandle*>(static_cast<intptr_t>(model));
    return 0;
  });
}

jintArray native_tokenize(JNIEnv* env, jclass, jlong model, jbyteArray text, jboolean add_special,
                          jboolean parse_special) {
  return guarded(env, static_cast<jintArray>(nullptr), [&]() -> jintArray {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    auto r = m->tokenize(to_string(env, text), add_special == JNI_TRUE, parse_special == JNI_TRUE);
    if (!r.ok()) {
      throw_status(env, r.status());
      return nullptr;
    }
    return to_jints(env, *r);
  });
}

jbyteArray native_detokenize(JNIEnv* env, jclass, jlong model, jintArray tokens) {
  return guarded(env, static_cast<jbyteArray>(nullptr), [&]() -> jbyteArray {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    const std::vector<int32_t> ids = to_ints(env, tokens);
    auto r = m->detokenize(std::span<const int32_t>(ids));
    if (!r.ok()) {
      throw_status(env, r.status());
      return nullptr;
    }
    return to_bytes(env, *r);
  });
}

void native_reset(JNIEnv* env, jclass, jlong model) {
  guarded(env, 0, [&] {
    if (auto m = model_of(env, model)) m->reset();
    return 0;
  });
}

void native_save_state(JNIEnv* env, jclass, jlong model, jbyteArray path) {
  guarded(env, 0, [&] {
    if (auto m = model_of(env, model)) {
      const Status s = m->save_state(to_string(env, path));
      if (!s.ok()) throw_status(env, s);
    }
    return 0;
  });
}

void native_load_state(JNIEnv* env, jclass, jlong model, jbyteArray path) {
  guarded(env, 0, [&] {
    if (auto m = model_of(env, model)) {
      const Status s = m->load_state(to_string(env, path));
      if (!s.ok()) throw_status(env, s);
    }
    return 0;
  });
}

jlongArray native_engine_stats(JNIEnv* env, jclass, jlong model) {
  return guarded(env, static_cast<jlongArray>(nullptr), [&]() -> jlongArray {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    const EngineStats s = m->engine_stats();
    const jlong v[] = {s.steps,  s.batched_tokens, s.active,
                       s.queued, s.fallbacks,      s.boundary_bytes};
    jlongArray a = env->NewLongArray(6);
    if (a != nullptr) env->SetLongArrayRegion(a, 0, 6, v);
    return a;
  });
}

jobject native_info(JNIEnv* env, jclass, jlong model) {
  return guarded(env, static_cast<jobject>(nullptr), [&]() -> jobject {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    const ModelInfo& i = m->info();
    const std::string* strings[] = {
        &i.path,      &i.architecture, &i.name,        &i.chat_template_origin,
        &i.placement, &i.mmproj_path,  &i.image_marker};
    const auto n_strings = static_cast<jsize>(std::size(strings));
    jobjectArray s = env->NewObjectArray(n_strings, cache().byte_array, nullptr);
    if (s == nullptr) return nullptr;
    for (jsize k = 0; k < n_strings; ++k) {
      jbyteArray b = to_bytes(env, *strings[k]);
      if (b == nullptr) return nullptr;
      env->SetObjectArrayElement(s, k, b);
      env->DeleteLocalRef(b);
    }
    const jlong v[] = {i.n_params,    i.file_bytes, i.n_layer,   i.n_embd,    i.n_vocab,
                       i.n_ctx_train, i.n_ctx,      i.n_threads, i.bos_token, i.add_bos ? 1 : 0};
    const auto n_numbers = static_cast<jsize>(std::size(v));
    jlongArray nums = env->NewLongArray(n_numbers);
    if (nums == nullptr) return nullptr;
    env->SetLongArrayRegion(nums, 0, n_numbers, v);
    return env->NewObject(cache().model_info, cache().model_info_ctor, s, nums);
  });
}

jlong native_new_cancel(JNIEnv* env, jclass) {
  return guarded(env, jlong{0}, [&] {
    return static_cast<jlong>(reinterpret_cast<intptr_t>(new CancelHandle()));
  });
}

void native_cancel(JNIEnv* /*env*/, jclass, jlong cancel) {
  if (CancelHandle* c = cancel_of(cancel)) c->token->cancel();
}

void native_free_cancel(JNIEnv* /*env*/, jclass, jlong cancel) { delete cancel_of(cancel); }

jfloatArray native_logits(JNIEnv* env, jclass, jlong model, jintArray tokens, jint first_row) {
  return guarded(env, static_cast<jfloatArray>(nullptr), [&]() -> jfloatArray {
    auto m = model_of(env, model);
    if (!m) return nullptr;
    const std::vector<int32_t> ids = to_ints(env, tokens);
    auto r = m->logits(std::span<const int32_t>(ids), first_row);
    if (!r.ok()) {
      throw_status(env, r.status());
      return nullptr;
    }
    if (r->size() > static_cast<size_t>(INT32_MAX)) {
      throw_status(env, out_of_range("logits: more values than a Java array holds"));
      return nullptr;
    }
    const auto n = static_cast<jsize>(r->size());
    jfloatArray out = env->NewFloatArray(n);
    if (out != nullptr && n > 0) env->SetFloatArrayRegion(out, 0, n, r->data());
    return out;
  });
}

jobjectArray native_drain_log(JNIEnv* env, jclass, jlong model) {
  return guarded(env, static_cast<jobjectArray>(nullptr), [&]() -> jobjectArray {
    auto* h = reinterpret_cast<ModelHandle*>(static_cast<intptr_t>(model));
    if (h == nullptr || !h->log) return nullptr;
    const std::deque<std::string> lines = h->log->take();
    if (lines.empty()) return nullptr;
    jobjectArray out =
        env->NewObjectArray(static_cast<jsize>(lines.size()), cache().byte_array, nullptr);
    if (out == nullptr) return nullptr;
    for (size_t i = 0; i < lines.size(); ++i) {
      jbyteArray b = to_bytes(env, lines[i]);
      if (b == nullptr) return nullptr;
      env->SetObjectArrayElement(out, static_cast<jsize>(i), b);
      env->DeleteLocalRef(b);
    }
    return out;
  });
}

}  // namespace geniex::jni
