/* GenieX C ABI: a small, stable interface over the C++ API (geniex/geniex.hpp) for bindings
 * (Python ctypes, Java JNI) and plugins.
 *
 *   geniex_model_params mp = geniex_model_default_params();
 *   mp.path = "gemma-3-270m.gguf";
 *   geniex_model* model = NULL;
 *   geniex_error* err = NULL;
 *   if (geniex_model_load(&mp, &model, &err) != GENIEX_OK) {
 *     fprintf(stderr, "%s\n", geniex_error_message(err));
 *     geniex_error_free(err);
 *     return 1;
 *   }
 *   geniex_generation_params gp = geniex_generation_default_params();
 *   geniex_generation* gen = NULL;
 *   if (geniex_generate(model, "The capital of France is", &gp, NULL, NULL, &gen, &err) ==
 *       GENIEX_OK) {
 *     puts(geniex_generation_text(gen));
 *     geniex_generation_free(gen);
 *   }
 *   geniex_model_free(model);
 *
 * Conventions:
 * - Every fallible function returns a geniex_status. On failure, when `err` is not NULL, *err
 *   receives a heap geniex_error the caller frees with geniex_error_free; on success *err is
 *   left untouched. Output handles (*out, *tokens) are set to NULL on failure. NULL for a
 *   required argument is GENIEX_ERR_INVALID_ARGUMENT, never a crash.
 * - Whatever the library hands out (models, generations, errors, token arrays) is owned by the
 *   caller and released with the matching *_free function; every *_free accepts NULL.
 * - Parameter structs begin with `struct_size`: set it to sizeof the struct (the *_default_params
 *   functions do). Later versions only append fields: a size that ends before a field means the
 *   caller's header predates it (its default applies); a size smaller than the struct's first
 *   version is GENIEX_ERR_INVALID_ARGUMENT.
 * - Strings are UTF-8 and NUL-terminated. No C++ exception crosses this interface.
 * - A geniex_model is not thread-safe: use one per thread.
 */
#ifndef GENIEX_GENIEX_H_
#define GENIEX_GENIEX_H_

#include <stddef.h>
#include <stdint.h>

/** Marks the exported symbols of the C ABI (default visibility in a shared library built with
 *  -fvisibility=hidden). Define it before including this header to override. */
#ifndef GENIEX_API
#if defined(__GNUC__) || defined(__clang__)
#define GENIEX_API __attribute__((visibility("default")))
#else
#define GENIEX_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Result of every fallible call; mirrors geniex::StatusCode. */
typedef enum geniex_status {
  GENIEX_OK = 0,                     /**< success */
  GENIEX_ERR_INVALID_ARGUMENT = 1,   /**< the caller passed something malformed (or NULL) */
  GENIEX_ERR_NOT_FOUND = 2,          /**< file, key or tensor absent */
  GENIEX_ERR_OUT_OF_RANGE = 3,       /**< index or size beyond a limit (e.g. prompt > context) */
  GENIEX_ERR_DATA_LOSS = 4,          /**< a file is corrupt or truncated */
  GENIEX_ERR_UNIMPLEMENTED = 5,      /**< valid but not supported by this build */
  GENIEX_ERR_RESOURCE_EXHAUSTED = 6, /**< memory or another budget ran out */
  GENIEX_ERR_IO_ERROR = 7,           /**< the operating system refused an I/O call */
  GENIEX_ERR_INTERNAL = 8            /**< a bug of ours (including any escaped exception) */
} geniex_status;

/** An error: a geniex_status code and a message naming what was wrong. Opaque. */
typedef struct geniex_error geniex_error;
/** A loaded model with one conversation context. Opaque. */
typedef struct geniex_model geniex_model;
/** The result of one generation. Opaque. */
typedef struct geniex_generation geniex_generation;

/** The library version, e.g. "0.1.0". Static storage; never NULL. */
GENIEX_API const char* geniex_version(void);

/** The code of `err`; GENIEX_OK when `err` is NULL. */
GENIEX_API int geniex_error_code(const geniex_error* err);
/** The message of `err` (valid until geniex_error_free); "" when `err` is NULL. */
GENIEX_API const char* geniex_error_message(const geniex_error* err);
/** Releases `err`; NULL is a no-op. */
GENIEX_API void geniex_error_free(geniex_error* err);

/** How to load a model. Obtain with geniex_model_default_params() and then set `path`. */
typedef struct geniex_model_params {
  uint32_t struct_size; /**< sizeof(geniex_model_params) */
  const char* path;     /**< GGUF file; required */
  const char* device;   /**< "auto", "cpu", "gpu", "npu", or NULL for "auto" */
  int32_t n_ctx;        /**< context window in tokens; 0 = default (4096), capped at training */
  int32_t n_threads;    /**< worker threads, 0..1024; 0 = the CPUs this process may use */
  int32_t n_batch;      /**< most prompt tokens evaluated per step; 0 = default (512) */
  /* Appended in 0.2 (vision-language models): */
  const char* mmproj; /**< vision encoder + projector GGUF that makes the model take images
                           (geniex_generate_with_images); NULL or "" = text only */
  /* Appended in 0.3 (layer offload): */
  int32_t offload_layers; /**< decoder layers that may run on the accelerator `device` prefers:
                               the last N (and the output head when N >= 1), the rest on the
                               CPU; 0 = all on the CPU; -1 = no limit (default) */
} geniex_model_params;

/** Defaults: path NULL, device "auto", n_ctx 4096, n_threads 0, n_batch 512, mmproj NULL,
 *  offload_layers -1. */
GENIEX_API geniex_model_params geniex_model_default_params(void);

/** Loads a model. On success *out receives a model to release with geniex_model_free.
 *  Errors: NULL arguments, struct_size too small, unknown device, missing file (NOT_FOUND),
 *  corrupt file (DATA_LOSS), unsupported architecture or weights (UNIMPLEMENTED). */
GENIEX_API int geniex_model_load(const geniex_model_params* params, geniex_model** out,
                                 geniex_error** err);
/** Releases `model`; NULL is a no-op. */
GENIEX_API void geniex_model_free(geniex_model* model);
/** Vocabulary size of `model`; 0 when `model` is NULL. */
GENIEX_API int geniex_model_n_vocab(const geniex_model* model);
/** Context window `model` was loaded with; 0 when `model` is NULL. */
GENIEX_API int geniex_model_n_ctx(const geniex_model* model);
/** The text that marks an image's place in a prompt of geniex_generate_with_images (e.g.
 *  "<image>"); "" for a text model (loaded without mmproj) or NULL. Valid while `model` is. */
GENIEX_API const char* geniex_model_image_marker(const geniex_model* model);

/** Tokenizes `text`. On success *tokens receives *n ids to release with geniex_tokens_free
 *  (*tokens is NULL when *n is 0). `add_special` adds BOS and other automatic specials;
 *  `parse_special` turns special-token text into the special tokens. */
GENIEX_API int geniex_tokenize(geniex_model* model, const char* text, int add_special,
                               int parse_special, int32_t** tokens, size_t* n, geniex_error** err);
/** Releases an array from geniex_tokenize; NULL is a no-op. */
GENIEX_API void geniex_tokens_free(int32_t* tokens);

/** Stops generations from any thread: geniex_cancel_token_cancel() ends every generation whose
 *  params point at the token at its next step (a prompt chunk during prefill, or a token), with
 *  stop reason "cancelled" and the text made so far. Once cancelled it stays cancelled. All
 *  functions are thread-safe; the token may be freed while a generation still holds it. */
typedef struct geniex_cancel_token geniex_cancel_token;
/** A new token (not cancelled), to release with geniex_cancel_token_free; NULL when out of
 *  memory. */
GENIEX_API geniex_cancel_token* geniex_cancel_token_new(void);
/** Cancels; NULL is a no-op. */
GENIEX_API void geniex_cancel_token_cancel(geniex_cancel_token* token);
/** 1 once cancelled, else 0 (also for NULL). */
GENIEX_API int geniex_cancel_token_cancelled(const geniex_cancel_token* token);
/** Releases the caller's reference; NULL is a no-op. */
GENIEX_API void geniex_cancel_token_free(geniex_cancel_token* token);

/** Sampling and stopping for one generation. Obtain with geniex_generation_default_params(). */
typedef struct geniex_generation_params {
  uint32_t struct_size;     /**< sizeof(geniex_generation_params) */
  int32_t max_tokens;       /**< upper bound of generated tokens (>= 0) */
  float temperature;        /**< 0 = greedy */
  int32_t top_k;            /**< 0 = off */
  float top_p;              /**< 1 = off */
  float min_p;              /**< 0 = off */
  float repetition_penalty; /**< 1 = off */
  float presence_penalty;   /**< 0 = off */
  float frequency_penalty;  /**< 0 = off */
  int32_t penalty_last_n;   /**< window of the penalties; -1 = whole context */
  int64_t seed;             /**< sampler seed; negative (-1) = a fresh random seed per call */
  const char* const* stop;  /**< stop strings (generation ends before the first); may be NULL */
  size_t n_stop;            /**< number of entries in `stop` */
  int ignore_eos;           /**< nonzero: keep going after end-of-generation tokens */
  int add_special;   /**< geniex_generate only: nonzero adds BOS and other automatic specials */
  int parse_special; /**< geniex_generate only: nonzero parses special-token text in the prompt */
  /** Cancels the generation from another thread; NULL = none. (Added after the first version:
   *  callers with an older, smaller struct_size get none.) */
  geniex_cancel_token* cancel;
  /** Structured output: a JSON Schema (JSON text) the generated text must satisfy, as
   *  geniex::GenerationConfig::json_schema; NULL = none. A schema outside the supported subset
   *  is GENIEX_ERR_INVALID_ARGUMENT naming the keyword. (Appended after `cancel`.) */
  const char* json_schema;
} geniex_generation_params;

/** Defaults equal to geniex::GenerationConfig{}: max_tokens 256, temperature 0.8, top_k 40,
 *  top_p 0.95, min_p 0.05, penalties off (1/0/0, last_n 64), seed -1, no stop strings,
 *  ignore_eos 0, add_special 1, parse_special 0, cancel NULL, json_schema NULL. */
GENIEX_API geniex_generation_params geniex_generation_default_params(void);

/** Receives each piece of generated text (`len` bytes, not NUL-terminated) as soon as it is
 *  final, with the token that completed it. Return 0 to cancel (stop reason "cancelled"),
 *  nonzero to continue. Must not call back into the same model. */
typedef int (*geniex_token_callback)(const char* text, size_t len, int32_t token, void* user_data);

/** One chat turn; role is "system", "user" or "assistant". */
typedef struct geniex_chat_message {
  const char* role;    /**< "system", "user" or "assistant" */
  const char* content; /**< the turn's text */
} geniex_chat_message;

/** Completes raw text (no chat template). `params` NULL = defaults; `callback` may be NULL.
 *  On success *out receives a generation to release with geniex_generation_free.
 *  Errors: NULL model/prompt/out, invalid settings, a prompt that does not fit the context
 *  (OUT_OF_RANGE). */
GENIEX_API int geniex_generate(geniex_model* model, const char* prompt,
                               const geniex_generation_params* params,
                               geniex_token_callback callback, void* user_data,
                               geniex_generation** out, geniex_error** err);
/** One image for geniex_generate_with_images: the encoded bytes of a JPEG, PNG, BMP, GIF (first
 *  frame) or WebP file, or its path. `bytes` (with n_bytes > 0) wins over `path`; the library
 *  copies the bytes, so they need to live only during the call. */
typedef struct geniex_image {
  const uint8_t* bytes; /**< encoded image file, or NULL to read `path` */
  size_t n_bytes;       /**< bytes in `bytes` */
  const char* path;     /**< image file, read when `bytes` is NULL */
} geniex_image;

/** Completes raw text with `n_images` images (a model loaded with mmproj). Image i goes where
 *  the prompt has its i-th geniex_model_image_marker; with no marker in the prompt, every image
 *  goes before the text. n_images 0 is geniex_generate. Otherwise as geniex_generate.
 *  Errors (INVALID_ARGUMENT unless noted): NULL images with n_images > 0, an image with neither
 *  bytes nor path, a text model, markers not one per image, an undecodable image, a missing
 *  image file (NOT_FOUND), more image tokens than the context holds (OUT_OF_RANGE). The model
 *  stays usable after an error. */
GENIEX_API int geniex_generate_with_images(geniex_model* model, const char* prompt,
                                           const geniex_image* images, size_t n_images,
                                           const geniex_generation_params* params,
                                           geniex_token_callback callback, void* user_data,
                                           geniex_generation** out, geniex_error** err);
/** Applies the model's chat template to `n` messages and generates the reply; otherwise as
 *  geniex_generate. A model without a chat template is NOT_FOUND. */
GENIEX_API int geniex_chat(geniex_model* model, const geniex_chat_message* messages, size_t n,
                           const geniex_generation_params* params, geniex_token_callback callback,
                           void* user_data, geniex_generation** out, geniex_error** err);

/** Speed of one generation. */
typedef struct geniex_timings {
  int32_t prompt_tokens;               /**< tokens of the prompt */
  int32_t cached_tokens;               /**< prompt tokens reused from the previous call */
  int32_t generated_tokens;            /**< tokens sampled */
  double prompt_ms;                    /**< prefill of the uncached prompt tokens */
  double generation_ms;                /**< from the first sampled token to the end */
  double ttft_ms;                      /**< call start to the first token */
  double prompt_tokens_per_second;     /**< uncached prompt tokens / prompt time */
  double generation_tokens_per_second; /**< generated tokens / generation time */
} geniex_timings;

/** Generated text, NUL-terminated (no stop string, no end-of-generation token text); "" when
 *  `gen` is NULL. Valid until geniex_generation_free. */
GENIEX_API const char* geniex_generation_text(const geniex_generation* gen);
/** Length in bytes of geniex_generation_text (the text may hold NUL bytes); 0 for NULL. */
GENIEX_API size_t geniex_generation_text_length(const geniex_generation* gen);
/** Number of generated token ids (including a final end-of-generation token, if any). */
GENIEX_API size_t geniex_generation_n_tokens(const geniex_generation* gen);
/** Generated token ids; NULL when there are none. Valid until geniex_generation_free. */
GENIEX_API const int32_t* geniex_generation_tokens(const geniex_generation* gen);
/** Number of prompt token ids the model was fed. */
GENIEX_API size_t geniex_generation_n_prompt_tokens(const geniex_generation* gen);
/** Prompt token ids; NULL when there are none. Valid until geniex_generation_free. */
GENIEX_API const int32_t* geniex_generation_prompt_tokens(const geniex_generation* gen);
/** Why generation ended: "eog", "length", "stop", "cancelled" or "context_full"; "" for NULL.
 *  Static storage. */
GENIEX_API const char* geniex_generation_stop_reason(const geniex_generation* gen);
/** Timings of the generation; all zero for NULL. */
GENIEX_API geniex_timings geniex_generation_timings(const geniex_generation* gen);
/** Releases `gen`; NULL is a no-op. */
GENIEX_API void geniex_generation_free(geniex_generation* gen);

/** The vectors of one geniex_embed / geniex_embed_tokens call (release with
 *  geniex_embeddings_free). */
typedef struct geniex_embeddings geniex_embeddings;

/** Embeds `n_texts` NUL-terminated texts (tokenized with the vocabulary's specials): one vector
 *  each, the model's final hidden states pooled per text, as geniex::Model::embed.
 *  `pooling`: NULL or "model" (as the GGUF declares; mean when it declares none), "mean", "cls",
 *  "last" or "none" (every token's vector, one after another). `normalize` nonzero: unit L2
 *  length. `dimensions` > 0 keeps the first values of each vector (renormalised); 0 = all.
 *  Errors: NULL arguments, no texts, an empty text, an unknown pooling (INVALID_ARGUMENT), a
 *  text longer than the context (OUT_OF_RANGE). The model stays usable after an error. */
GENIEX_API int geniex_embed(geniex_model* model, const char* const* texts, size_t n_texts,
                            const char* pooling, int normalize, int32_t dimensions,
                            geniex_embeddings** out, geniex_error** err);
/** The same from token ids: input i is tokens[i][0 .. n_tokens[i]). Ids outside the vocabulary
 *  are INVALID_ARGUMENT. */
GENIEX_API int geniex_embed_tokens(geniex_model* model, const int32_t* const* tokens,
                                   const size_t* n_tokens, size_t n_inputs, const char* pooling,
                                   int normalize, int32_t dimensions, geniex_embeddings** out,
                                   geniex_error** err);
/** Number of vectors (one per input); 0 for NULL. */
GENIEX_API size_t geniex_embeddings_count(const geniex_embeddings* e);
/** Floats of vector `i` (n_dims, or n_tokens x n_dims with pooling "none"); 0 when out of range. */
GENIEX_API size_t geniex_embeddings_size(const geniex_embeddings* e, size_t i);
/** Vector `i`; NULL when out of range. Valid until geniex_embeddings_free. */
GENIEX_API const float* geniex_embeddings_vector(const geniex_embeddings* e, size_t i);
/** Tokens of every input together. */
GENIEX_API int32_t geniex_embeddings_prompt_tokens(const geniex_embeddings* e);
/** Releases `e`; NULL is a no-op. */
GENIEX_API void geniex_embeddings_free(geniex_embeddings* e);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GENIEX_GENIEX_H_
