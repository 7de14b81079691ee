package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Engine errors reach Java as GenieXException with the engine's code and message. */
class ErrorsTest {
  static final Path TINY = TestSupport.models().resolve("tiny-llama-q8_0.gguf");

  @Test
  void missingFileIsNotFound(@TempDir Path dir) {
    String missing = dir.resolve("nope.gguf").toString();
    GenieXException e = assertThrows(GenieXException.class,
        () -> new ModelBuilder(missing).device(Device.CPU).build());
    assertEquals(StatusCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains(missing), e.getMessage());
  }

  @Test
  void corruptGgufIsDataLoss(@TempDir Path dir) throws Exception {
    byte[] garbage = new byte[68];
    Arrays.fill(garbage, (byte) 0xff);
    System.arraycopy("GGUF".getBytes("US-ASCII"), 0, garbage, 0, 4);
    Path bad = Files.write(dir.resolve("garbage.gguf"), garbage);
    GenieXException e = assertThrows(GenieXException.class,
        () -> new ModelBuilder(bad.toString()).device(Device.CPU).build());
    assertEquals(StatusCode.DATA_LOSS, e.code(), e.getMessage());
    byte[] good = Files.readAllBytes(TINY);
    Path truncated = Files.write(dir.resolve("truncated.gguf"),
        Arrays.copyOf(good, good.length / 2));
    e = assertThrows(GenieXException.class,
        () -> new ModelBuilder(truncated.toString()).device(Device.CPU).build());
    assertEquals(StatusCode.DATA_LOSS, e.code(), e.getMessage());
  }

  @Test
  void offloadLayersSplitsTheModelAndBelowMinusOneIsInvalidArgument() {
    // The reference NPU plugin (the build's plugins folder beside the JNI library): the tiny
    // llama's last layer and head there, the embedding and layers 0-1 on the CPU.
    try (Model m = new ModelBuilder(TINY.toString()).device(Device.NPU).offloadLayers(1)
        .threads(2).contextSize(64).build()) {
      String p = m.info().placement();
      assertTrue(p.startsWith("embedding .. layer 1 -> cpu("), p);
      assertTrue(p.contains("layer 2 .. output -> npu(ref"), p);
    }
    GenieXException e = assertThrows(GenieXException.class,
        () -> new ModelBuilder(TINY.toString()).offloadLayers(-2).build());
    assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("offload layers must be >= 0"), e.getMessage());
  }

  @Test
  void badArgumentsAreInvalidArgumentAndTheModelStaysUsable() {
    try (Model m = new ModelBuilder(TINY.toString()).device(Device.CPU).threads(2)
        .contextSize(64).build()) {
      GenieXException e = assertThrows(GenieXException.class,
          () -> m.generate("Hello", GenerationConfig.builder().maxTokens(-1).build(), null));
      assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
      assertEquals("INVALID_ARGUMENT: max_tokens must be >= 0, got -1", e.getMessage());
      e = assertThrows(GenieXException.class,
          () -> m.generate("Hello", GenerationConfig.builder().topP(1.5f).build(), null));
      assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
      e = assertThrows(GenieXException.class, () -> m.generate(new int[0], null, null));
      assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
      e = assertThrows(GenieXException.class, () -> m.generate(
          "Hello", GenerationConfig.builder().jsonSchema("{\"type\": \"frobnicate\"}").build(),
          null));
      assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
      // A prompt longer than the context.
      StringBuilder longPrompt = new StringBuilder();
      for (int i = 0; i < 200; i++) {
        longPrompt.append("word ");
      }
      e = assertThrows(GenieXException.class,
          () -> m.generate(longPrompt.toString(), TestSupport.greedy(2), null));
      assertTrue(e.code() == StatusCode.OUT_OF_RANGE || e.code() == StatusCode.INVALID_ARGUMENT,
          e.getMessage());
      assertEquals(StopReason.MAX_TOKENS, m.generate("Hello", TestSupport.greedy(2), null)
          .stopReason());
    }
    GenieXException e = assertThrows(GenieXException.class,
        () -> new ModelBuilder(TINY.toString()).threads(-3).build());
    assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
  }
}
