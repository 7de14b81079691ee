/* Tests of the C ABI (geniex/geniex.h), written in C to prove the header is plain C.
 * Uses the tiny random-weight Qwen2 model; GENIEX_SOURCE_DIR locates the repository. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geniex/geniex.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* Checks `rc` is GENIEX_OK; otherwise prints the error and counts a failure. Frees `err`. */
#define CHECK_OK(rc, err)                                                                          \
  do {                                                                                             \
    int check_ok_rc_ = (rc);                                                                       \
    if (check_ok_rc_ != GENIEX_OK) {                                                               \
      fprintf(stderr, "%s:%d: expected GENIEX_OK, got %d: %s\n", __FILE__, __LINE__, check_ok_rc_, \
              geniex_error_message(err));                                                          \
      ++g_failures;                                                                                \
    }                                                                                              \
    geniex_error_free(err);                                                                        \
    (err) = NULL;                                                                                  \
  } while (0)

/* Collected stream: concatenated text and the number of callback calls. */
typedef struct {
  char text[4096];
  size_t len;
  int calls;
  int cancel_after;   /* return 0 on this call (1-based); 0 = never */
  size_t offsets[64]; /* offsets[i]: where call i's piece starts in `text` */
} stream_state;

static int on_token(const char* text, size_t len, int32_t token, void* user_data) {
  stream_state* s = (stream_state*)user_data;
  (void)token;
  if (s->calls < 64) s->offsets[s->calls] = s->len;
  if (s->len + len < sizeof(s->text)) {
    memcpy(s->text + s->len, text, len);
    s->len += len;
    s->text[s->len] = '\0';
  }
  ++s->calls;
  return !(s->cancel_after > 0 && s->calls >= s->cancel_after);
}

static geniex_model* load(const char* path, int32_t n_ctx) {
  geniex_model_params mp = geniex_model_default_params();
  geniex_model* model = NULL;
  geniex_error* err = NULL;
  mp.path = path;
  mp.device = "cpu";
  mp.n_ctx = n_ctx;
  mp.n_threads = 2;
  CHECK_OK(geniex_model_load(&mp, &model, &err), err);
  CHECK(model != NULL);
  return model;
}

static geniex_generation_params greedy(int32_t max_tokens) {
  geniex_generation_params gp = geniex_generation_default_params();
  gp.temperature = 0.0f;
  gp.max_tokens = max_tokens;
  return gp;
}

static const char* kPrompt = "The capital of France is";

static void test_defaults(void) {
  geniex_generation_params gp = geniex_generation_default_params();
  geniex_model_params mp = geniex_model_default_params();
  CHECK(gp.struct_size == sizeof(geniex_generation_params));
  CHECK(gp.max_tokens == 256);
  CHECK(gp.temperature == 0.8f);
  CHECK(gp.top_k == 40);
  CHECK(gp.top_p == 0.95f);
  CHECK(gp.min_p == 0.05f);
  CHECK(gp.repetition_penalty == 1.0f);
  CHECK(gp.penalty_last_n == 64);
  CHECK(gp.seed == -1);
  CHECK(gp.stop == NULL && gp.n_stop == 0);
  CHECK(gp.ignore_eos == 0 && gp.add_special == 1 && gp.parse_special == 0);
  CHECK(mp.struct_size == sizeof(geniex_model_params));
  CHECK(mp.n_ctx == 4096 && mp.n_threads == 0 && mp.n_batch == 512);
  CHECK(mp.offload_layers == -1);
  CHECK(strlen(geniex_version()) > 0);
}

/* Greedy generation with streaming; leaves the stream (text and piece offsets) in `s`. */
static void test_greedy_stream(geniex_model* model, stream_state* out) {
  geniex_generation_params gp = greedy(8);
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  stream_state s;
  geniex_timings t;
  memset(&s, 0, sizeof(s));
  CHECK_OK(geniex_generate(model, kPrompt, &gp, on_token, &s, &gen, &err), err);
  *out = s;
  CHECK(gen != NULL);
  if (gen == NULL) return;
  CHECK(geniex_generation_n_tokens(gen) == 8);
  CHECK(geniex_generation_tokens(gen) != NULL);
  CHECK(strcmp(geniex_generation_stop_reason(gen), "length") == 0);
  CHECK(strcmp(geniex_generation_text(gen), s.text) == 0);
  CHECK(geniex_generation_text_length(gen) == s.len);
  CHECK(s.calls > 0);
  CHECK(geniex_generation_n_prompt_tokens(gen) > 0);
  CHECK(geniex_generation_prompt_tokens(gen) != NULL);
  t = geniex_generation_timings(gen);
  CHECK(t.generated_tokens == 8);
  CHECK((size_t)t.prompt_tokens == geniex_generation_n_prompt_tokens(gen));
  CHECK(t.prompt_ms >= 0 && t.generation_ms >= 0);
  printf("greedy: \"%s\" (%d stream pieces, %.1f tok/s)\n", geniex_generation_text(gen), s.calls,
         t.generation_tokens_per_second);
  geniex_generation_free(gen);
}

static void test_seeded_sampling(geniex_model* model) {
  geniex_generation_params gp = geniex_generation_default_params();
  geniex_generation* a = NULL;
  geniex_generation* b = NULL;
  geniex_error* err = NULL;
  gp.temperature = 1.0f;
  gp.max_tokens = 8;
  gp.seed = 1234;
  CHECK_OK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &a, &err), err);
  CHECK_OK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &b, &err), err);
  if (a != NULL && b != NULL) {
    CHECK(geniex_generation_n_tokens(a) == geniex_generation_n_tokens(b));
    CHECK(geniex_generation_n_tokens(a) > 0);
    if (geniex_generation_n_tokens(a) == geniex_generation_n_tokens(b)) {
      CHECK(memcmp(geniex_generation_tokens(a), geniex_generation_tokens(b),
                   geniex_generation_n_tokens(a) * sizeof(int32_t)) == 0);
    }
    CHECK(strcmp(geniex_generation_text(a), geniex_generation_text(b)) == 0);
  }
  geniex_generation_free(a);
  geniex_generation_free(b);
}

static void test_cancel(geniex_model* model) {
  geniex_generation_params gp = greedy(8);
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  stream_state s;
  memset(&s, 0, sizeof(s));
  s.cancel_after = 2;
  CHECK_OK(geniex_generate(model, kPrompt, &gp, on_token, &s, &gen, &err), err);
  CHECK(gen != NULL);
  CHECK(s.calls == 2);
  CHECK(strcmp(geniex_generation_stop_reason(gen), "cancelled") == 0);
  CHECK(geniex_generation_n_tokens(gen) == 2);
  geniex_generation_free(gen);
}

/* geniex_cancel_token: cancelled before the call (no token generated), and from the callback
 * (which keeps returning nonzero): the engine stops at its next step, far before max_tokens. */
typedef struct {
  int calls;
  geniex_cancel_token* token;
} cancel_state;

static int cancel_on_third(const char* text, size_t len, int32_t token, void* user_data) {
  cancel_state* s = (cancel_state*)user_data;
  (void)text;
  (void)len;
  (void)token;
  if (++s->calls == 3) geniex_cancel_token_cancel(s->token);
  return 1;
}

static void test_cancel_token(geniex_model* model, geniex_model* long_ctx) {
  geniex_generation_params gp = greedy(8);
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  geniex_cancel_token* token = geniex_cancel_token_new();
  cancel_state state;
  CHECK(token != NULL);
  CHECK(geniex_cancel_token_cancelled(token) == 0);
  CHECK(geniex_cancel_token_cancelled(NULL) == 0);
  geniex_cancel_token_cancel(NULL);
  geniex_cancel_token_free(NULL);
  geniex_cancel_token_cancel(token);
  CHECK(geniex_cancel_token_cancelled(token) == 1);
  gp.cancel = token;
  CHECK_OK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, &err), err);
  CHECK(strcmp(geniex_generation_stop_reason(gen), "cancelled") == 0);
  CHECK(geniex_generation_n_tokens(gen) == 0);
  geniex_generation_free(gen);
  geniex_cancel_token_free(token);

  /* The callbacks run on this thread while the engine runs ahead: a long generation (2000
   * tokens in a 2048-token context) so that the cancel always comes before its end. */
  token = geniex_cancel_token_new();
  state.calls = 0;
  state.token = token;
  gp = greedy(2000);
  gp.ignore_eos = 1;
  gp.cancel = token;
  gen = NULL;
  if (long_ctx != NULL) {
    CHECK_OK(geniex_generate(long_ctx, kPrompt, &gp, cancel_on_third, &state, &gen, &err), err);
    CHECK(strcmp(geniex_generation_stop_reason(gen), "cancelled") == 0);
    CHECK(geniex_generation_n_tokens(gen) >= 3 && geniex_generation_n_tokens(gen) < 2000);
    geniex_generation_free(gen);
  }
  geniex_cancel_token_free(token);

  /* A caller built against the header before `cancel` (a smaller struct) still works. */
  gp = greedy(2);
  gp.struct_size = (uint32_t)offsetof(geniex_generation_params, cancel);
  gp.cancel = NULL;
  gen = NULL;
  CHECK_OK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, &err), err);
  CHECK(geniex_generation_n_tokens(gen) == 2);
  geniex_generation_free(gen);
}

/* Stops on the text of two consecutive streamed tokens of the greedy run: the text must end
 * right before them. */
static void test_stop_string(geniex_model* model, const stream_state* greedy_run) {
  geniex_generation_params gp = greedy(8);
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  const char* stop[1];
  char needle[256];
  size_t start = 0;
  int k = 0;
  int found = 0;
  /* Two whole pieces k and k+1 whose text first occurs where they were streamed; the latest
   * such pair, so that the cut text is not empty unless the model only repeats itself (k = 0
   * always qualifies). */
  for (k = (greedy_run->calls < 64 ? greedy_run->calls : 64) - 2; k >= 0; --k) {
    const size_t begin = greedy_run->offsets[k];
    const size_t end = k + 2 < greedy_run->calls ? greedy_run->offsets[k + 2] : greedy_run->len;
    if (end - begin >= sizeof(needle)) continue;
    memcpy(needle, greedy_run->text + begin, end - begin);
    needle[end - begin] = '\0';
    if (strstr(greedy_run->text, needle) == greedy_run->text + begin) {
      start = begin;
      found = 1;
      break;
    }
  }
  CHECK(found);
  if (!found) return;
  printf("stop string: \"%s\" at byte %zu\n", needle, start);
  stop[0] = needle;
  gp.stop = stop;
  gp.n_stop = 1;
  CHECK_OK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, &err), err);
  CHECK(gen != NULL);
  if (gen == NULL) return;
  CHECK(strcmp(geniex_generation_stop_reason(gen), "stop") == 0);
  CHECK(geniex_generation_text_length(gen) == start);
  CHECK(strncmp(geniex_generation_text(gen), greedy_run->text, start) == 0);
  CHECK(geniex_generation_n_tokens(gen) == (size_t)(k + 2));
  geniex_generation_free(gen);
}

/* Structured output: the reply is held to a schema (an object with an enum and a bounded
 * integer: its exact shape is checked by hand), generation ends at end-of-generation; an
 * unsupported keyword is INVALID_ARGUMENT naming it. */
static void test_json_schema(geniex_model* model) {
  geniex_generation_params gp = greedy(200);
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  const char* text = NULL;
  int n = -1;
  char word[8] = {0};
  gp.json_schema =
      "{\"type\":\"object\",\"properties\":{\"w\":{\"enum\":[\"yes\",\"no\"]},"
      "\"n\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9}},"
      "\"required\":[\"w\",\"n\"],\"additionalProperties\":false}";
  CHECK_OK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, &err), err);
  CHECK(gen != NULL);
  if (gen == NULL) return;
  text = geniex_generation_text(gen);
  printf("json_schema reply: %s\n", text);
  CHECK(strcmp(geniex_generation_stop_reason(gen), "eog") == 0);
  CHECK(sscanf(text, " { \"w\" : \"%3[a-z]\" , \"n\" : %d }", word, &n) == 2);
  CHECK(strcmp(word, "yes") == 0 || strcmp(word, "no") == 0);
  CHECK(n >= 0 && n <= 9);
  geniex_generation_free(gen);
  gen = NULL;
  gp.json_schema = "{\"type\":\"string\",\"pattern\":\"^a\"}";
  CHECK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, &err) ==
        GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(gen == NULL);
  CHECK(err != NULL && strstr(geniex_error_message(err), "'pattern'") != NULL);
  geniex_error_free(err);
}

static void test_chat(geniex_model* model) {
  geniex_chat_message msgs[2];
  geniex_generation_params gp = greedy(4);
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  msgs[0].role = "system";
  msgs[0].content = "You are terse.";
  msgs[1].role = "user";
  msgs[1].content = "Hi";
  CHECK_OK(geniex_chat(model, msgs, 2, &gp, NULL, NULL, &gen, &err), err);
  CHECK(gen != NULL);
  CHECK(geniex_generation_n_tokens(gen) >= 1 && geniex_generation_n_tokens(gen) <= 4);
  CHECK(geniex_generation_n_prompt_tokens(gen) > 2);
  geniex_generation_free(gen);
  gen = NULL;
  msgs[1].role = "robot";
  CHECK(geniex_chat(model, msgs, 2, &gp, NULL, NULL, &gen, &err) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(gen == NULL);
  geniex_error_free(err);
  err = NULL;
  msgs[1].content = NULL;
  CHECK(geniex_chat(model, msgs, 2, &gp, NULL, NULL, &gen, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
}

static void test_tokenize(geniex_model* model) {
  int32_t* toks = NULL;
  size_t n = 0;
  geniex_error* err = NULL;
  int i = 0;
  CHECK_OK(geniex_tokenize(model, kPrompt, 1, 0, &toks, &n, &err), err);
  CHECK(n > 0);
  CHECK(toks != NULL);
  for (i = 0; i < (int)n; ++i) CHECK(toks[i] >= 0 && toks[i] < geniex_model_n_vocab(model));
  geniex_tokens_free(toks);
  CHECK(geniex_tokenize(NULL, kPrompt, 1, 0, &toks, &n, &err) == GENIEX_ERR_INVALID_ARGUMENT);
  geniex_error_free(err);
  err = NULL;
  CHECK(geniex_tokenize(model, NULL, 1, 0, &toks, &n, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
}

static void test_errors(geniex_model* model, const char* dir) {
  geniex_model_params mp = geniex_model_default_params();
  geniex_generation_params gp = greedy(4);
  geniex_model* m = NULL;
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  char missing[4096];

  /* Missing file: NOT_FOUND naming the path. */
  snprintf(missing, sizeof(missing), "%s/tests/data/models/no-such-model.gguf", dir);
  mp.path = missing;
  CHECK(geniex_model_load(&mp, &m, &err) == GENIEX_ERR_NOT_FOUND);
  CHECK(m == NULL);
  CHECK(err != NULL);
  CHECK(geniex_error_code(err) == GENIEX_ERR_NOT_FOUND);
  CHECK(strstr(geniex_error_message(err), missing) != NULL);
  geniex_error_free(err);
  err = NULL;

  /* NULL arguments. */
  CHECK(geniex_model_load(NULL, &m, &err) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_error_code(err) == GENIEX_ERR_INVALID_ARGUMENT);
  geniex_error_free(err);
  err = NULL;
  CHECK(geniex_model_load(&mp, NULL, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  mp.path = NULL;
  CHECK(geniex_model_load(&mp, &m, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_generate(NULL, kPrompt, &gp, NULL, NULL, &gen, &err) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_error_code(err) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(gen == NULL);
  geniex_error_free(err);
  err = NULL;
  CHECK(geniex_generate(model, NULL, &gp, NULL, NULL, &gen, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_generate(model, kPrompt, &gp, NULL, NULL, NULL, NULL) ==
        GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_chat(NULL, NULL, 0, NULL, NULL, NULL, &gen, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_model_n_vocab(NULL) == 0 && geniex_model_n_ctx(NULL) == 0);
  CHECK(strcmp(geniex_error_message(NULL), "") == 0);
  CHECK(geniex_generation_n_tokens(NULL) == 0);
  geniex_model_free(NULL);
  geniex_generation_free(NULL);
  geniex_error_free(NULL);
  geniex_tokens_free(NULL);

  /* offload_layers below -1: INVALID_ARGUMENT naming the setting (before the file is looked at). */
  mp = geniex_model_default_params();
  mp.path = missing;
  mp.offload_layers = -2;
  CHECK(geniex_model_load(&mp, &m, &err) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(geniex_error_message(err), "offload layers") != NULL);
  geniex_error_free(err);
  err = NULL;

  /* struct_size 0. */
  mp = geniex_model_default_params();
  mp.path = missing;
  mp.struct_size = 0;
  CHECK(geniex_model_load(&mp, &m, &err) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_error_code(err) == GENIEX_ERR_INVALID_ARGUMENT);
  geniex_error_free(err);
  err = NULL;
  gp.struct_size = 0;
  CHECK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, &err) ==
        GENIEX_ERR_INVALID_ARGUMENT);
  geniex_error_free(err);
  err = NULL;
  gp = greedy(4);

  /* Invalid device and stop list. */
  mp = geniex_model_default_params();
  mp.path = missing;
  mp.device = "tpu";
  CHECK(geniex_model_load(&mp, &m, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  gp.n_stop = 1;
  CHECK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, NULL) ==
        GENIEX_ERR_INVALID_ARGUMENT);
  gp = greedy(-1);
  CHECK(geniex_generate(model, kPrompt, &gp, NULL, NULL, &gen, NULL) ==
        GENIEX_ERR_INVALID_ARGUMENT);
}

static void test_prompt_too_long(const char* path) {
  geniex_model* small = load(path, 8);
  geniex_generation_params gp = greedy(4);
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  if (small == NULL) return;
  CHECK(geniex_model_n_ctx(small) == 8);
  CHECK(geniex_generate(small,
                        "one two three four five six seven eight nine ten eleven twelve thirteen",
                        &gp, NULL, NULL, &gen, &err) == GENIEX_ERR_OUT_OF_RANGE);
  CHECK(gen == NULL);
  CHECK(geniex_error_code(err) == GENIEX_ERR_OUT_OF_RANGE);
  geniex_error_free(err);
  geniex_model_free(small);
}

/* The tiny BERT encoder: one unit-length vector per text, a batch equal to single calls, token
 * arrays equal to the texts' tokens, pooling "none" gives a vector per token, and the errors. */
static void test_embed(const char* dir) {
  char bert_path[4096];
  const char* texts[3] = {"the cat sat on the mat", "hello world", "x"};
  geniex_embeddings* all = NULL;
  geniex_embeddings* one = NULL;
  geniex_error* err = NULL;
  geniex_model* bert = NULL;
  size_t i = 0, c = 0;
  snprintf(bert_path, sizeof(bert_path), "%s/tests/data/embed/tiny-bert-f32.gguf", dir);
  bert = load(bert_path, 128);
  if (bert == NULL) return;
  CHECK_OK(geniex_embed(bert, texts, 3, NULL, 1, 0, &all, &err), err);
  CHECK(geniex_embeddings_count(all) == 3);
  CHECK(geniex_embeddings_prompt_tokens(all) == 8 + 4 + 3); /* [CLS] ... [SEP] */
  for (i = 0; i < 3; ++i) {
    double n = 0.0;
    const float* v = geniex_embeddings_vector(all, i);
    CHECK(geniex_embeddings_size(all, i) == 64);
    for (c = 0; c < 64 && v != NULL; ++c) n += (double)v[c] * v[c];
    CHECK(fabs(n - 1.0) < 1e-5);
    CHECK_OK(geniex_embed(bert, &texts[i], 1, "model", 1, 0, &one, &err), err);
    for (c = 0; c < 64 && v != NULL && one != NULL; ++c) {
      CHECK(fabs(v[c] - geniex_embeddings_vector(one, 0)[c]) < 1e-5);
    }
    geniex_embeddings_free(one);
    one = NULL;
  }
  {
    /* "hello world" as ids ([CLS] hello world [SEP]): the same vector as the text. */
    int32_t ids[16];
    const int32_t* rows[1];
    size_t n_ids = 0;
    int32_t* toks = NULL;
    CHECK_OK(geniex_tokenize(bert, texts[1], 1, 0, &toks, &n_ids, &err), err);
    CHECK(n_ids == 4);
    for (i = 0; i < n_ids && i < 16; ++i) ids[i] = toks[i];
    geniex_tokens_free(toks);
    rows[0] = ids;
    CHECK_OK(geniex_embed_tokens(bert, rows, &n_ids, 1, "mean", 1, 0, &one, &err), err);
    for (c = 0; c < 64 && one != NULL; ++c) {
      CHECK(fabs(geniex_embeddings_vector(one, 0)[c] - geniex_embeddings_vector(all, 1)[c]) < 1e-6);
    }
    geniex_embeddings_free(one);
    one = NULL;
    CHECK_OK(geniex_embed_tokens(bert, rows, &n_ids, 1, "none", 0, 16, &one, &err), err);
    CHECK(geniex_embeddings_size(one, 0) == 4 * 16);
    geniex_embeddings_free(one);
    one = NULL;
    ids[1] = 1000000; /* outside the vocabulary */
    CHECK(geniex_embed_tokens(bert, rows, &n_ids, 1, NULL, 1, 0, &one, &err) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    CHECK(one == NULL);
    geniex_error_free(err);
    err = NULL;
  }
  CHECK(geniex_embed(bert, texts, 3, "max", 1, 0, &one, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_embed(bert, texts, 0, NULL, 1, 0, &one, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_embed(bert, NULL, 1, NULL, 1, 0, &one, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_embed(NULL, texts, 1, NULL, 1, 0, &one, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(geniex_embed(bert, texts, 1, NULL, 1, 65, &one, NULL) == GENIEX_ERR_INVALID_ARGUMENT);
  CHECK(one == NULL);
  CHECK(geniex_embeddings_count(NULL) == 0 && geniex_embeddings_vector(all, 3) == NULL);
  geniex_embeddings_free(all);
  geniex_embeddings_free(NULL);
  geniex_model_free(bert);
}

/* Reads a whole file into a malloc'ed buffer; NULL on failure. */
static unsigned char* read_file(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  unsigned char* buf = NULL;
  long size = 0;
  *n = 0;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
    buf = (unsigned char*)malloc((size_t)size);
    if (buf != NULL && fread(buf, 1, (size_t)size, f) != (size_t)size) {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  if (buf != NULL) *n = (size_t)size;
  return buf;
}

/* The tiny LFM2-VL with its mmproj: an image by path and by bytes (same answer), errors. */
static void test_vision(const char* dir) {
  char model_path[4096], mmproj_path[4096], image_path[4096], missing[4096];
  geniex_model_params mp = geniex_model_default_params();
  geniex_generation_params gp = greedy(4);
  geniex_model* model = NULL;
  geniex_model* text = NULL;
  geniex_generation* by_path = NULL;
  geniex_generation* by_bytes = NULL;
  geniex_generation* gen = NULL;
  geniex_error* err = NULL;
  geniex_image img;
  unsigned char* bytes = NULL;
  unsigned char junk[64];
  size_t n_bytes = 0;
  snprintf(model_path, sizeof(model_path), "%s/tests/data/models/tiny-lfm2vl-f32.gguf", dir);
  snprintf(mmproj_path, sizeof(mmproj_path), "%s/tests/data/models/mmproj-tiny-lfm2vl-f32.gguf",
           dir);
  snprintf(image_path, sizeof(image_path), "%s/tests/data/vision/chelsea.png", dir);
  snprintf(missing, sizeof(missing), "%s/tests/data/vision/no-such.png", dir);
  CHECK(mp.mmproj == NULL);

  /* A caller built against the header before mmproj (a smaller struct) still loads. */
  mp.path = model_path;
  mp.device = "cpu";
  mp.n_threads = 2;
  mp.n_ctx = 1024;
  mp.struct_size = (uint32_t)offsetof(geniex_model_params, mmproj);
  CHECK_OK(geniex_model_load(&mp, &text, &err), err);
  CHECK(text != NULL);
  CHECK(strcmp(geniex_model_image_marker(text), "") == 0);

  mp = geniex_model_default_params();
  mp.path = model_path;
  mp.mmproj = mmproj_path;
  mp.device = "cpu";
  mp.n_threads = 2;
  mp.n_ctx = 1024;
  CHECK_OK(geniex_model_load(&mp, &model, &err), err);
  if (model == NULL) {
    geniex_model_free(text);
    return;
  }
  CHECK(strcmp(geniex_model_image_marker(model), "<image>") == 0);
  CHECK(strcmp(geniex_model_image_marker(NULL), "") == 0);

  /* By path, at the marker. */
  memset(&img, 0, sizeof(img));
  img.path = image_path;
  CHECK_OK(geniex_generate_with_images(model, "<image>What is this?", &img, 1, &gp, NULL, NULL,
                                       &by_path, &err),
           err);
  CHECK(by_path != NULL);
  /* The image tokens are part of the prompt. */
  CHECK(geniex_generation_n_prompt_tokens(by_path) > 20);
  CHECK(geniex_generation_n_tokens(by_path) == 4);

  /* By bytes: the same ids (greedy, same prompt). */
  bytes = read_file(image_path, &n_bytes);
  CHECK(bytes != NULL);
  memset(&img, 0, sizeof(img));
  img.bytes = bytes;
  img.n_bytes = n_bytes;
  geniex_model_free(model); /* a fresh context: no prefix reuse between the two */
  model = NULL;
  CHECK_OK(geniex_model_load(&mp, &model, &err), err);
  if (model != NULL) {
    CHECK_OK(geniex_generate_with_images(model, "<image>What is this?", &img, 1, &gp, NULL, NULL,
                                         &by_bytes, &err),
             err);
  }
  if (by_path != NULL && by_bytes != NULL) {
    CHECK(geniex_generation_n_prompt_tokens(by_bytes) ==
          geniex_generation_n_prompt_tokens(by_path));
    CHECK(geniex_generation_n_tokens(by_bytes) == geniex_generation_n_tokens(by_path));
    CHECK(memcmp(geniex_generation_tokens(by_bytes), geniex_generation_tokens(by_path),
                 geniex_generation_n_tokens(by_path) * sizeof(int32_t)) == 0);
  }
  geniex_generation_free(by_path);
  geniex_generation_free(by_bytes);

  if (model != NULL) {
    /* Errors, each leaving the model usable. Corrupt bytes: INVALID_ARGUMENT. */
    memset(junk, 0x5a, sizeof(junk));
    img.bytes = junk;
    img.n_bytes = sizeof(junk);
    CHECK(geniex_generate_with_images(model, "x", &img, 1, &gp, NULL, NULL, &gen, &err) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    CHECK(gen == NULL);
    CHECK(err != NULL && strlen(geniex_error_message(err)) > 0);
    geniex_error_free(err);
    err = NULL;
    /* A missing file: NOT_FOUND naming it. */
    memset(&img, 0, sizeof(img));
    img.path = missing;
    CHECK(geniex_generate_with_images(model, "x", &img, 1, &gp, NULL, NULL, &gen, &err) ==
          GENIEX_ERR_NOT_FOUND);
    CHECK(err != NULL && strstr(geniex_error_message(err), "no-such.png") != NULL);
    geniex_error_free(err);
    err = NULL;
    /* Neither bytes nor path; NULL array; bytes NULL with a size; markers for 2, 1 image. */
    memset(&img, 0, sizeof(img));
    CHECK(geniex_generate_with_images(model, "x", &img, 1, &gp, NULL, NULL, &gen, NULL) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    CHECK(geniex_generate_with_images(model, "x", NULL, 1, &gp, NULL, NULL, &gen, NULL) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    img.n_bytes = 3;
    CHECK(geniex_generate_with_images(model, "x", &img, 1, &gp, NULL, NULL, &gen, NULL) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    memset(&img, 0, sizeof(img));
    img.path = image_path;
    CHECK(geniex_generate_with_images(model, "<image><image>x", &img, 1, &gp, NULL, NULL, &gen,
                                      NULL) == GENIEX_ERR_INVALID_ARGUMENT);
    CHECK(geniex_generate_with_images(NULL, "x", &img, 1, &gp, NULL, NULL, &gen, NULL) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    CHECK(geniex_generate_with_images(model, "x", &img, 1, &gp, NULL, NULL, NULL, NULL) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    /* Still usable: no images is plain generation; then an image again. */
    CHECK_OK(geniex_generate_with_images(model, "Hello", NULL, 0, &gp, NULL, NULL, &gen, &err),
             err);
    geniex_generation_free(gen);
    gen = NULL;
    CHECK_OK(geniex_generate_with_images(model, "Hi", &img, 1, &gp, NULL, NULL, &gen, &err), err);
    geniex_generation_free(gen);
    gen = NULL;
  }

  /* A text model (no mmproj) given an image: INVALID_ARGUMENT saying it takes none. */
  if (text != NULL) {
    CHECK(geniex_generate_with_images(text, "x", &img, 1, &gp, NULL, NULL, &gen, &err) ==
          GENIEX_ERR_INVALID_ARGUMENT);
    CHECK(err != NULL && strstr(geniex_error_message(err), "takes no images") != NULL);
    geniex_error_free(err);
    err = NULL;
  }
  free(bytes);
  geniex_model_free(text);
  geniex_model_free(model);
}

int main(void) {
  const char* dir = getenv("GENIEX_SOURCE_DIR");
  char path[4096];
  stream_state greedy_run;
  geniex_model* model = NULL;
  if (dir == NULL) {
    fprintf(stderr, "GENIEX_SOURCE_DIR is not set\n");
    return 1;
  }
  snprintf(path, sizeof(path), "%s/tests/data/models/tiny-qwen2-q8_0.gguf", dir);
  printf("geniex %s\n", geniex_version());

  test_defaults();
  model = load(path, 256);
  if (model == NULL) {
    fprintf(stderr, "FAILED: cannot load %s\n", path);
    return 1;
  }
  CHECK(geniex_model_n_vocab(model) > 0);
  CHECK(geniex_model_n_ctx(model) > 0);
  memset(&greedy_run, 0, sizeof(greedy_run));
  test_greedy_stream(model, &greedy_run);
  test_seeded_sampling(model);
  test_cancel(model);
  {
    geniex_model* long_ctx = load(path, 2048);
    test_cancel_token(model, long_ctx);
    geniex_model_free(long_ctx);
  }
  test_stop_string(model, &greedy_run);
  test_json_schema(model);
  test_chat(model);
  test_tokenize(model);
  test_errors(model, dir);
  test_prompt_too_long(path);
  test_vision(dir);
  test_embed(dir);
  geniex_model_free(model);

  if (g_failures > 0) {
    fprintf(stderr, "FAILED: %d check(s)\n", g_failures);
    return 1;
  }
  printf("PASSED\n");
  return 0;
}
