/* Embeds GenieX through its C ABI, built with pkg-config:
 *   cc main.c $(pkg-config --cflags --libs geniex) -o c-consumer
 *   ./c-consumer MODEL.gguf [PROMPT] [MAX_TOKENS] [DEVICE]
 * (static: link libgeniex.a with `pkg-config --static --libs geniex`.) */
#include <geniex/geniex.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [MAX_TOKENS] [DEVICE]\n", argv[0]);
    return 2;
  }
  geniex_model_params mp = geniex_model_default_params();
  mp.path = argv[1];
  mp.device = argc > 4 ? argv[4] : "cpu"; /* npu: plugins beside libgeniex */
  mp.n_ctx = 512;
  geniex_model* model = NULL;
  geniex_error* err = NULL;
  if (geniex_model_load(&mp, &model, &err) != GENIEX_OK) {
    fprintf(stderr, "load failed: %s\n", geniex_error_message(err));
    geniex_error_free(err);
    return 1;
  }
  geniex_generation_params gp = geniex_generation_default_params();
  gp.max_tokens = argc > 3 ? atoi(argv[3]) : 16;
  gp.temperature = 0.0f; /* greedy */
  geniex_generation* gen = NULL;
  int rc = geniex_generate(model, argc > 2 ? argv[2] : "The capital of France is", &gp, NULL, NULL,
                           &gen, &err);
  if (rc != GENIEX_OK) {
    fprintf(stderr, "generate failed: %s\n", geniex_error_message(err));
    geniex_error_free(err);
    geniex_model_free(model);
    return 1;
  }
  printf("%s\n", geniex_generation_text(gen));
  fprintf(stderr, "geniex %s\n", geniex_version());
  geniex_generation_free(gen);
  geniex_model_free(model);
  return 0;
}
