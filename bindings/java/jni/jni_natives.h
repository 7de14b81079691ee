// The native methods of dev.geniex.NativeBridge, registered by JNI_OnLoad (jni_onload.cpp holds
// the name/signature table; a signature that drifts from the Java declaration fails the load).
#pragma once

#include <jni.h>

namespace geniex::jni {

// jni_model.cpp
jlong native_load(JNIEnv* env, jclass, jbyteArray path, jint device, jintArray ints,
                  jbyteArray plugin_dir, jbyteArray mmproj);
void native_free(JNIEnv* env, jclass, jlong model);
jintArray native_tokenize(JNIEnv* env, jclass, jlong model, jbyteArray text, jboolean add_special,
                          jboolean parse_special);
jbyteArray native_detokenize(JNIEnv* env, jclass, jlong model, jintArray tokens);
void native_reset(JNIEnv* env, jclass, jlong model);
void native_save_state(JNIEnv* env, jclass, jlong model, jbyteArray path);
void native_load_state(JNIEnv* env, jclass, jlong model, jbyteArray path);
jlongArray native_engine_stats(JNIEnv* env, jclass, jlong model);
jobject native_info(JNIEnv* env, jclass, jlong model);
jlong native_new_cancel(JNIEnv* env, jclass);
void native_cancel(JNIEnv* env, jclass, jlong cancel);
void native_free_cancel(JNIEnv* env, jclass, jlong cancel);
jobjectArray native_drain_log(JNIEnv* env, jclass, jlong model);
jfloatArray native_logits(JNIEnv* env, jclass, jlong model, jintArray tokens, jint first_row);

// jni_generate.cpp
jobject native_generate(JNIEnv* env, jclass, jlong model, jbyteArray prompt, jintArray tokens,
                        jobjectArray image_paths, jobjectArray image_bytes, jintArray cfg_ints,
                        jfloatArray cfg_floats, jlong seed, jobjectArray stops, jbyteArray schema,
                        jlong cancel, jobject listener);
jobject native_chat(JNIEnv* env, jclass, jlong model, jobjectArray roles, jobjectArray contents,
                    jintArray part_counts, jintArray part_types, jobjectArray part_texts,
                    jobjectArray part_bytes, jintArray cfg_ints, jfloatArray cfg_floats, jlong seed,
                    jobjectArray stops, jbyteArray schema, jlong cancel, jobject listener);
jbyteArray native_apply_chat_template(JNIEnv* env, jclass, jlong model, jobjectArray roles,
                                      jobjectArray contents, jintArray part_counts,
                                      jintArray part_types, jobjectArray part_texts,
                                      jobjectArray part_bytes, jboolean add_generation_prompt);
/// Benchmark: n listener upcalls of one piece, as generate makes them; elapsed nanoseconds.
jlong native_upcall_nanos(JNIEnv* env, jclass, jobject sink, jint n);

}  // namespace geniex::jni
