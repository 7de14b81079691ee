// The C ABI (include/geniex/geniex.h) over the C++ API: handles own C++ objects, Status becomes
// a code plus a heap geniex_error, and every entry point catches whatever might escape so that
// no exception crosses into C.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "geniex/geniex.h"
#include "geniex/geniex.hpp"

#ifndef GENIEX_VERSION_STRING
#define GENIEX_VERSION_STRING "0.1.0"
#endif

struct geniex_error {
  int code = GENIEX_OK;
  std::string message;
};

struct geniex_cancel_token {
  std::shared_ptr<geniex::CancelToken> token = std::make_shared<geniex::CancelToken>();
};

struct geniex_model {
  geniex::Model model;
};

struct geniex_generation {
  geniex::Generation gen;
};

struct geniex_embeddings {
  geniex::Embeddings e;
};

namespace {

using geniex::Status;
using geniex::StatusCode;

int code_of(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return GENIEX_OK;
    case StatusCode::kInvalidArgument: return GENIEX_ERR_INVALID_ARGUMENT;
    case StatusCode::kNotFound: return GENIEX_ERR_NOT_FOUND;
    case StatusCode::kOutOfRange: return GENIEX_ERR_OUT_OF_RANGE;
    case StatusCode::kDataLoss: return GENIEX_ERR_DATA_LOSS;
    case StatusCode::kUnimplemented: return GENIEX_ERR_UNIMPLEMENTED;
    case StatusCode::kResourceExhausted: return GENIEX_ERR_RESOURCE_EXHAUSTED;
    case StatusCode::kIoError: return GENIEX_ERR_IO_ERROR;
    case StatusCode::kInternal: return GENIEX_ERR_INTERNAL;
  }
  return GENIEX_ERR_INTERNAL;
}

// Reports `code` + `message` through `err` (when the caller asked) and returns the code. Never
// throws: if even the error cannot be allocated, the caller still gets the code.
int fail(geniex_error** err, int code, const char* message) noexcept {
  if (err != nullptr) {
    try {
      auto e = std::make_unique<geniex_error>();
      e->code = code;
      e->message = message;
      *err = e.release();
    } catch (...) {
      *err = nullptr;
    }
  }
  return code;
}

int fail(geniex_error** err, const Status& s) noexcept {
  return fail(err, code_of(s.code()), s.message().c_str());
}

int invalid(geniex_error** err, const char* message) noexcept {
  return fail(err, GENIEX_ERR_INVALID_ARGUMENT, message);
}

// Runs `body` (which returns a geniex_status) and turns any exception into an error code.
template <typename F>
int guarded(geniex_error** err, F&& body) noexcept {
  try {
    return std::forward<F>(body)();
  } catch (const std::bad_alloc&) {
    return fail(err, GENIEX_ERR_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return fail(err, GENIEX_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(err, GENIEX_ERR_INTERNAL, "unknown exception");
  }
}

// The size of geniex_model_params before `mmproj` was appended: the smallest a caller may pass.
constexpr size_t kModelParamsV1Size = offsetof(geniex_model_params, mmproj);
// geniex_generation_params before `cancel` was added.
constexpr size_t kGenerationParamsV1Size = offsetof(geniex_generation_params, cancel);

// Whether a caller's struct of `struct_size` bytes holds the field at `offset` of `size` bytes.
constexpr bool has_field(uint32_t struct_size, size_t offset, size_t size) {
  return struct_size >= offset + size;
}

// Converts C generation params (NULL = defaults) into a GenerationConfig.
int config_of(const geniex_generation_params* p, geniex::GenerationConfig* out,
              geniex_error** err) {
  geniex::GenerationConfig c;
  if (p == nullptr) {
    *out = std::move(c);
    return GENIEX_OK;
  }
  if (p->struct_size < kGenerationParamsV1Size) {
    return invalid(err,
                   ("geniex_generation_params.struct_size is " + std::to_string(p->struct_size) +
                    ", expected at least " + std::to_string(kGenerationParamsV1Size))
                       .c_str());
  }
  if (p->n_stop > 0 && p->stop == nullptr) {
    return invalid(err, "geniex_generation_params.stop is NULL but n_stop > 0");
  }
  c.max_tokens = p->max_tokens;
  c.temperature = p->temperature;
  c.top_k = p->top_k;
  c.top_p = p->top_p;
  c.min_p = p->min_p;
  c.repetition_penalty = p->repetition_penalty;
  c.presence_penalty = p->presence_penalty;
  c.frequency_penalty = p->frequency_penalty;
  c.penalty_last_n = p->penalty_last_n;
  if (p->seed >= 0) c.seed = static_cast<uint64_t>(p->seed);
  for (size_t i = 0; i < p->n_stop; ++i) {
    if (p->stop[i] == nullptr) {
      return invalid(err,
                     ("geniex_generation_params.stop[" + std::to_string(i) + "] is NULL").c_str());
    }
    c.stop.emplace_back(p->stop[i]);
  }
  c.ignore_eos = p->ignore_eos != 0;
  c.add_special = p->add_special != 0;
  c.parse_special = p->parse_special != 0;
  if (has_field(p->struct_size, offsetof(geniex_generation_params, cancel), sizeof(p->cancel)) &&
      p->cancel != nullptr) {
    c.cancel = p->cancel->token;
  }
  if (has_field(p->struct_size, offsetof(geniex_generation_params, json_schema),
                sizeof(p->json_schema)) &&
      p->json_schema != nullptr) {
    c.json_schema = p->json_schema;
  }
  *out = std::move(c);
  return GENIEX_OK;
}

// Adapts a C callback; an empty TokenCallback when there is none.
geniex::TokenCallback callback_of(geniex_token_callback cb, void* user_data) {
  if (cb == nullptr) return {};
  return [cb, user_data](std::string_view text, int32_t token) {
    return cb(text.data(), text.size(), token, user_data) != 0;
  };
}

// Hands a finished generation to the caller.
int deliver(geniex::Result<geniex::Generation> r, geniex_generation** out, geniex_error** err) {
  if (!r.ok()) return fail(err, r.status());
  auto g = std::make_unique<geniex_generation>();
  g->gen = std::move(r).value();
  *out = g.release();
  return GENIEX_OK;
}

}  // namespace

extern "C" {

const char* geniex_version(void) { return GENIEX_VERSION_STRING; }

int geniex_error_code(const geniex_error* err) { return err != nullptr ? err->code : GENIEX_OK; }

const char* geniex_error_message(const geniex_error* err) {
  return err != nullptr ? err->message.c_str() : "";
}

void geniex_error_free(geniex_error* err) { std::unique_ptr<geniex_error> owned(err); }

geniex_model_params geniex_model_default_params(void) {
  geniex_model_params p;
  std::memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(geniex_model_params);
  p.path = nullptr;
  p.device = "auto";
  p.n_ctx = 4096;
  p.n_threads = 0;
  p.n_batch = 512;
  p.mmproj = nullptr;
  p.offload_layers = -1;
  return p;
}

int geniex_model_load(const geniex_model_params* params, geniex_model** out, geniex_error** err) {
  if (out != nullptr) *out = nullptr;
  return guarded(err, [&]() -> int {
    if (params == nullptr) return invalid(err, "geniex_model_load: params is NULL");
    if (out == nullptr) return invalid(err, "geniex_model_load: out is NULL");
    if (params->struct_size < kModelParamsV1Size) {
      return invalid(err,
                     ("geniex_model_params.struct_size is " + std::to_string(params->struct_size) +
                      ", expected at least " + std::to_string(kModelParamsV1Size))
                         .c_str());
    }
    if (params->path == nullptr) return invalid(err, "geniex_model_params.path is NULL");
    geniex::ModelBuilder b(params->path);
    if (params->device != nullptr) {
      auto d = geniex::Device::parse(params->device);
      if (!d.ok()) return fail(err, d.status());
      b.with_device(*d);
    }
    if (params->n_ctx != 0) b.with_context_size(params->n_ctx);
    b.with_threads(params->n_threads);
    if (params->n_batch != 0) b.with_batch_size(params->n_batch);
    if (has_field(params->struct_size, offsetof(geniex_model_params, mmproj),
                  sizeof(params->mmproj)) &&
        params->mmproj != nullptr && params->mmproj[0] != '\0') {
      b.with_mmproj(params->mmproj);
    }
    if (has_field(params->struct_size, offsetof(geniex_model_params, offload_layers),
                  sizeof(params->offload_layers))) {
      b.with_offload_layers(params->offload_layers);
    }
    auto m = b.build();
    if (!m.ok()) return fail(err, m.status());
    auto handle = std::make_unique<geniex_model>(geniex_model{std::move(m).value()});
    *out = handle.release();
    return GENIEX_OK;
  });
}

void geniex_model_free(geniex_model* model) { std::unique_ptr<geniex_model> owned(model); }

int geniex_model_n_vocab(const geniex_model* model) {
  return model != nullptr ? model->model.info().n_vocab : 0;
}

int geniex_model_n_ctx(const geniex_model* model) {
  return model != nullptr ? model->model.info().n_ctx : 0;
}

const char* geniex_model_image_marker(const geniex_model* model) {
  return model != nullptr ? model->model.info().image_marker.c_str() : "";
}

int geniex_tokenize(geniex_model* model, const char* text, int add_special, int parse_special,
                    int32_t** tokens, size_t* n, geniex_error** err) {
  if (tokens != nullptr) *tokens = nullptr;
  if (n != nullptr) *n = 0;
  return guarded(err, [&]() -> int {
    if (model == nullptr) return invalid(err, "geniex_tokenize: model is NULL");
    if (text == nullptr) return invalid(err, "geniex_tokenize: text is NULL");
    if (tokens == nullptr || n == nullptr) {
      return invalid(err, "geniex_tokenize: tokens or n is NULL");
    }
    auto ids = model->model.tokenize(text, add_special != 0, parse_special != 0);
    if (!ids.ok()) return fail(err, ids.status());
    if (ids->empty()) return GENIEX_OK;
    // malloc, not new[]: geniex_tokens_free is the one place that releases it.
    auto* buf = static_cast<int32_t*>(std::malloc(ids->size() * sizeof(int32_t)));
    if (buf == nullptr) return fail(err, GENIEX_ERR_RESOURCE_EXHAUSTED, "out of memory");
    std::memcpy(buf, ids->data(), ids->size() * sizeof(int32_t));
    *tokens = buf;
    *n = ids->size();
    return GENIEX_OK;
  });
}

void geniex_tokens_free(int32_t* tokens) { std::free(tokens); }

geniex_cancel_token* geniex_cancel_token_new(void) {
  return new (std::nothrow) geniex_cancel_token();
}

void geniex_cancel_token_cancel(geniex_cancel_token* token) {
  if (token != nullptr) token->token->cancel();
}

int geniex_cancel_token_cancelled(const geniex_cancel_token* token) {
  return token != nullptr && token->token->cancelled() ? 1 : 0;
}

void geniex_cancel_token_free(geniex_cancel_token* token) { delete token; }

geniex_generation_params geniex_generation_default_params(void) {
  const geniex::GenerationConfig c;
  geniex_generation_params p;
  std::memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(geniex_generation_params);
  p.max_tokens = c.max_tokens;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  p.repetition_penalty = c.repetition_penalty;
  p.presence_penalty = c.presence_penalty;
  p.frequency_penalty = c.frequency_penalty;
  p.penalty_last_n = c.penalty_last_n;
  p.seed = c.seed ? static_cast<int64_t>(*c.seed) : -1;
  p.stop = nullptr;
  p.n_stop = 0;
  p.ignore_eos = c.ignore_eos ? 1 : 0;
  p.add_special = c.add_special ? 1 : 0;
  p.parse_special = c.parse_special ? 1 : 0;
  p.cancel = nullptr;
  p.json_schema = nullptr;
  return p;
}

int geniex_generate(geniex_model* model, const char* prompt, const geniex_generation_params* params,
                    geniex_token_callback callback, void* user_data, geniex_generation** out,
                    geniex_error** err) {
  if (out != nullptr) *out = nullptr;
  return guarded(err, [&]() -> int {
    if (model == nullptr) return invalid(err, "geniex_generate: model is NULL");
    if (prompt == nullptr) return invalid(err, "geniex_generate: prompt is NULL");
    if (out == nullptr) return invalid(err, "geniex_generate: out is NULL");
    geniex::GenerationConfig config;
    if (int rc = config_of(params, &config, err); rc != GENIEX_OK) return rc;
    return deliver(
        model->model.generate(std::string_view(prompt), config, callback_of(callback, user_data)),
        out, err);
  });
}

int geniex_generate_with_images(geniex_model* model, const char* prompt, const geniex_image* images,
                                size_t n_images, const geniex_generation_params* params,
                                geniex_token_callback callback, void* user_data,
                                geniex_generation** out, geniex_error** err) {
  if (out != nullptr) *out = nullptr;
  return guarded(err, [&]() -> int {
    if (model == nullptr) return invalid(err, "geniex_generate_with_images: model is NULL");
    if (prompt == nullptr) return invalid(err, "geniex_generate_with_images: prompt is NULL");
    if (out == nullptr) return invalid(err, "geniex_generate_with_images: out is NULL");
    if (images == nullptr && n_images > 0) {
      return invalid(err, "geniex_generate_with_images: images is NULL but n_images > 0");
    }
    std::vector<geniex::Image> imgs;
    imgs.reserve(n_images);
    for (size_t i = 0; i < n_images; ++i) {
      const geniex_image& im = images[i];
      const std::string which = "geniex_generate_with_images: images[" + std::to_string(i) + "]";
      if (im.bytes == nullptr && im.n_bytes > 0) {
        return invalid(err, (which + ".bytes is NULL but n_bytes > 0").c_str());
      }
      if (im.bytes != nullptr && im.n_bytes > 0) {
        imgs.push_back(
            geniex::Image::from_bytes(std::vector<uint8_t>(im.bytes, im.bytes + im.n_bytes)));
      } else if (im.path != nullptr && im.path[0] != '\0') {
        imgs.push_back(geniex::Image::from_file(im.path));
      } else {
        return invalid(err, (which + " has neither bytes nor a path").c_str());
      }
    }
    geniex::GenerationConfig config;
    if (int rc = config_of(params, &config, err); rc != GENIEX_OK) return rc;
    return deliver(
        model->model.generate(std::string_view(prompt), std::span<const geniex::Image>(imgs),
                              config, callback_of(callback, user_data)),
        out, err);
  });
}

int geniex_chat(geniex_model* model, const geniex_chat_message* messages, size_t n,
                const geniex_generation_params* params, geniex_token_callback callback,
                void* user_data, geniex_generation** out, geniex_error** err) {
  if (out != nullptr) *out = nullptr;
  return guarded(err, [&]() -> int {
    if (model == nullptr) return invalid(err, "geniex_chat: model is NULL");
    if (messages == nullptr && n > 0) return invalid(err, "geniex_chat: messages is NULL");
    if (out == nullptr) return invalid(err, "geniex_chat: out is NULL");
    std::vector<geniex::ChatMessage> msgs;
    msgs.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (messages[i].role == nullptr || messages[i].content == nullptr) {
        return invalid(
            err, ("geniex_chat: messages[" + std::to_string(i) + "] has a NULL role or content")
                     .c_str());
      }
      msgs.push_back({messages[i].role, messages[i].content});
    }
    geniex::GenerationConfig config;
    if (int rc = config_of(params, &config, err); rc != GENIEX_OK) return rc;
    return deliver(model->model.chat(std::span<const geniex::ChatMessage>(msgs), config,
                                     callback_of(callback, user_data)),
                   out, err);
  });
}

const char* geniex_generation_text(const geniex_generation* gen) {
  return gen != nullptr ? gen->gen.text.c_str() : "";
}

size_t geniex_generation_text_length(const geniex_generation* gen) {
  return gen != nullptr ? gen->gen.text.size() : 0;
}

size_t geniex_generation_n_tokens(const geniex_generation* gen) {
  return gen != nullptr ? gen->gen.tokens.size() : 0;
}

const int32_t* geniex_generation_tokens(const geniex_generation* gen) {
  return gen != nullptr && !gen->gen.tokens.empty() ? gen->gen.tokens.data() : nullptr;
}

size_t geniex_generation_n_prompt_tokens(const geniex_generation* gen) {
  return gen != nullptr ? gen->gen.prompt_tokens.size() : 0;
}

const int32_t* geniex_generation_prompt_tokens(const geniex_generation* gen) {
  return gen != nullptr && !gen->gen.prompt_tokens.empty() ? gen->gen.prompt_tokens.data()
                                                           : nullptr;
}

const char* geniex_generation_stop_reason(const geniex_generation* gen) {
  // stop_reason_name returns views of string literals, so .data() is NUL-terminated.
  return gen != nullptr ? geniex::stop_reason_name(gen->gen.stop_reason).data() : "";
}

geniex_timings geniex_generation_timings(const geniex_generation* gen) {
  geniex_timings t;
  std::memset(&t, 0, sizeof(t));
  if (gen == nullptr) return t;
  const geniex::Timings& s = gen->gen.timings;
  t.prompt_tokens = s.prompt_tokens;
  t.cached_tokens = s.cached_tokens;
  t.generated_tokens = s.generated_tokens;
  t.prompt_ms = s.prompt_ms;
  t.generation_ms = s.generation_ms;
  t.ttft_ms = s.ttft_ms;
  t.prompt_tokens_per_second = s.prompt_tokens_per_second();
  t.generation_tokens_per_second = s.generation_tokens_per_second();
  return t;
}

void geniex_generation_free(geniex_generation* gen) {
  std::unique_ptr<geniex_generation> owned(gen);
}

}  // extern "C"

namespace {

int embed_config(const char* pooling, int normalize, int32_t dimensions,
                 geniex::EmbeddingConfig* cfg, geniex_error** err) {
  if (pooling != nullptr) {
    auto p = geniex::parse_pooling(pooling);
    if (!p.ok()) return fail(err, p.status());
    cfg->pooling = *p;
  }
  cfg->normalize = normalize != 0;
  cfg->dimensions = dimensions;
  return GENIEX_OK;
}

int deliver_embeddings(geniex::Result<geniex::Embeddings> r, geniex_embeddings** out,
                       geniex_error** err) {
  if (!r.ok()) return fail(err, r.status());
  auto e = std::make_unique<geniex_embeddings>();
  e->e = std::move(*r);
  *out = e.release();
  return GENIEX_OK;
}

}  // namespace

int geniex_embed(geniex_model* model, const char* const* texts, size_t n_texts, const char* pooling,
                 int normalize, int32_t dimensions, geniex_embeddings** out, geniex_error** err) {
  if (out != nullptr) *out = nullptr;
  return guarded(err, [&]() -> int {
    if (model == nullptr) return invalid(err, "geniex_embed: model is NULL");
    if (texts == nullptr && n_texts > 0) return invalid(err, "geniex_embed: texts is NULL");
    if (out == nullptr) return invalid(err, "geniex_embed: out is NULL");
    std::vector<std::string> in;
    in.reserve(n_texts);
    for (size_t i = 0; i < n_texts; ++i) {
      if (texts[i] == nullptr) {
        return invalid(err, ("geniex_embed: texts[" + std::to_string(i) + "] is NULL").c_str());
      }
      in.emplace_back(texts[i]);
    }
    geniex::EmbeddingConfig cfg;
    if (int rc = embed_config(pooling, normalize, dimensions, &cfg, err); rc != GENIEX_OK) {
      return rc;
    }
    return deliver_embeddings(model->model.embed(std::span<const std::string>(in), cfg), out, err);
  });
}

int geniex_embed_tokens(geniex_model* model, const int32_t* const* tokens, const size_t* n_tokens,
                        size_t n_inputs, const char* pooling, int normalize, int32_t dimensions,
                        geniex_embeddings** out, geniex_error** err) {
  if (out != nullptr) *out = nullptr;
  return guarded(err, [&]() -> int {
    if (model == nullptr) return invalid(err, "geniex_embed_tokens: model is NULL");
    if ((tokens == nullptr || n_tokens == nullptr) && n_inputs > 0) {
      return invalid(err, "geniex_embed_tokens: tokens or n_tokens is NULL");
    }
    if (out == nullptr) return invalid(err, "geniex_embed_tokens: out is NULL");
    std::vector<std::vector<int32_t>> in(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      if (tokens[i] == nullptr && n_tokens[i] > 0) {
        return invalid(err,
                       ("geniex_embed_tokens: tokens[" + std::to_string(i) + "] is NULL").c_str());
      }
      if (n_tokens[i] > 0) in[i].assign(tokens[i], tokens[i] + n_tokens[i]);
    }
    geniex::EmbeddingConfig cfg;
    if (int rc = embed_config(pooling, normalize, dimensions, &cfg, err); rc != GENIEX_OK) {
      return rc;
    }
    return deliver_embeddings(model->model.embed(std::span<const std::vector<int32_t>>(in), cfg),
                              out, err);
  });
}

size_t geniex_embeddings_count(const geniex_embeddings* e) {
  return e != nullptr ? e->e.vectors.size() : 0;
}

size_t geniex_embeddings_size(const geniex_embeddings* e, size_t i) {
  return e != nullptr && i < e->e.vectors.size() ? e->e.vectors[i].size() : 0;
}

const float* geniex_embeddings_vector(const geniex_embeddings* e, size_t i) {
  return e != nullptr && i < e->e.vectors.size() ? e->e.vectors[i].data() : nullptr;
}

int32_t geniex_embeddings_prompt_tokens(const geniex_embeddings* e) {
  return e != nullptr ? e->e.prompt_tokens : 0;
}

void geniex_embeddings_free(geniex_embeddings* e) { delete e; }
