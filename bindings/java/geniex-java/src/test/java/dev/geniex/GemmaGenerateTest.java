package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Gemma 3 270M through Java: the same output as `geniex run`, text intact across JNI. */
class GemmaGenerateTest {
  static Model model;

  @BeforeAll
  static void load() {
    model = TestSupport.gemmaModel();
  }

  @AfterAll
  static void close() {
    model.close();
  }

  @Test
  void greedyEqualsGeniexRunAndPiecesConcatenateToTheText() throws Exception {
    String prompt = "1, 2, 3, 4, 5,";
    TestSupport.CliRun ref = TestSupport.cliRun(TestSupport.gemma(), 32, "--raw", "-p", prompt);
    List<Piece> pieces = new ArrayList<>();
    // `geniex run --raw` parses special-token text in the prompt.
    GenerationConfig cfg = TestSupport.greedy(32).toBuilder().parseSpecial(true).build();
    Generation g = model.generate(prompt, cfg, (text, token) -> pieces.add(new Piece(text, token)));
    assertArrayEquals(ref.promptTokens, g.promptTokens());
    assertArrayEquals(ref.tokens, g.tokens());
    assertEquals(ref.text, g.text());
    assertEquals(ref.stopReason, g.stopReason().engineName());
    StringBuilder joined = new StringBuilder();
    pieces.forEach(p -> joined.append(p.text()));
    assertEquals(g.text(), joined.toString());
    assertEquals(g.tokens().length, g.timings().generatedTokens());
    assertTrue(g.timings().generationTokensPerSecond() > 0);
    // Token ids in: the same continuation.
    assertArrayEquals(g.tokens(), model.generate(g.promptTokens(), cfg, null).tokens());
  }

  @Test
  void emojiAndCjkSurviveTheBoundaryByteForByte() throws Exception {
    for (String prompt : new String[] {"😀😀😀😀😀😀😀😀", "你好你好你好你好，世界"}) {
      TestSupport.CliRun ref = TestSupport.cliRun(TestSupport.gemma(), 12, "--raw", "-p", prompt);
      StringBuilder pieces = new StringBuilder();
      Generation g = model.generate(prompt, TestSupport.greedy(12),
          (text, token) -> pieces.append(text) != null);
      assertArrayEquals(ref.promptTokens, g.promptTokens(), prompt);
      assertArrayEquals(ref.text.getBytes(StandardCharsets.UTF_8),
          g.text().getBytes(StandardCharsets.UTF_8), prompt + ": " + ref.text + " vs " + g.text());
      assertEquals(g.text(), pieces.toString());
      assertTrue(g.text().codePoints().anyMatch(c -> c > 0x2E80), "no CJK/emoji: " + g.text());
    }
    // In through tokenize, back through detokenize: the same bytes (4-byte UTF-8 included).
    String mixed = "naïve 😀 你好世界 🇫🇷 𝄞 done";
    int[] ids = model.tokenize(mixed, false, false);
    assertEquals(mixed, model.detokenize(ids));
  }

  @Test
  void chatTemplateAndChatAgreeWithGenerateOnTheRenderedPrompt() {
    List<ChatMessage> msgs = Arrays.asList(ChatMessage.user("Name one color."));
    String rendered = model.applyChatTemplate(msgs, true);
    assertTrue(rendered.contains("<start_of_turn>user\nName one color.<end_of_turn>"), rendered);
    assertTrue(rendered.endsWith("<start_of_turn>model\n"), rendered);
    Generation chat = model.chat(msgs, TestSupport.greedy(8), null);
    // The rendering starts with "<bos>": no second BOS.
    GenerationConfig raw =
        TestSupport.greedy(8).toBuilder().parseSpecial(true).addSpecial(false).build();
    Generation gen = model.generate(rendered, raw, null);
    assertArrayEquals(gen.promptTokens(), chat.promptTokens());
    assertArrayEquals(gen.tokens(), chat.tokens());
    assertEquals(gen.text(), chat.text());
  }

  @Test
  void stateSavedAndLoadedReusesTheContext(@TempDir Path dir) {
    String prompt = "The quick brown fox jumps over the lazy dog. The quick brown fox";
    Generation first = model.generate(prompt, TestSupport.greedy(4), null);
    Path state = dir.resolve("ctx.bin");
    model.saveState(state.toString());
    assertTrue(Files.isRegularFile(state));
    model.reset();
    model.loadState(state.toString());
    Generation again = model.generate(prompt, TestSupport.greedy(4), null);
    assertArrayEquals(first.tokens(), again.tokens());
    assertTrue(again.timings().cachedTokens() > 0, "the loaded context was not reused");
    GenieXException e = assertThrows(GenieXException.class,
        () -> model.loadState(dir.resolve("missing.bin").toString()));
    assertTrue(e.code() != StatusCode.OK);
  }

  @Test
  void logitsArgmaxIsTheGreedyToken() {
    Generation g = model.generate("The capital of France is", TestSupport.greedy(1), null);
    int[] prompt = g.promptTokens();
    java.nio.FloatBuffer last = model.logits(prompt, prompt.length - 1);
    assertEquals(model.info().nVocab(), last.remaining());
    int best = 0;
    for (int i = 1; i < last.remaining(); i++) {
      if (last.get(i) > last.get(best)) {
        best = i;
      }
    }
    assertEquals(g.tokens()[0], best);
    GenieXException e = assertThrows(GenieXException.class, () -> model.logits(new int[0], 0));
    assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
  }

  @Test
  void theSuiteRunsUnderCheckJni() {
    assertTrue(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
        .contains("-Xcheck:jni"));
  }

  @Test
  void infoDescribesTheModel() {
    ModelInfo info = model.info();
    assertEquals("gemma3", info.architecture());
    assertEquals(1024, info.nCtx());
    assertTrue(info.nVocab() > 200000);
    assertEquals(2, info.bosToken());
  }
}
