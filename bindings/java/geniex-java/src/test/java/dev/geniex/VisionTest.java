package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import org.junit.jupiter.api.Test;

/** Images through Java on the tiny random-weight LFM2-VL: the same tokens as `geniex run`. */
class VisionTest {
  static final Path VL = TestSupport.models().resolve("tiny-lfm2vl-f32.gguf");
  static final Path MMPROJ = TestSupport.models().resolve("mmproj-tiny-lfm2vl-f32.gguf");
  static final Path CAT = TestSupport.root().resolve("tests/data/vision/chelsea.png");
  static final Path COFFEE = TestSupport.root().resolve("tests/data/vision/coffee.png");

  static TestSupport.CliRun cli(String... args) throws Exception {
    String[] all = new String[args.length + 4];
    all[0] = "--mmproj";
    all[1] = MMPROJ.toString();
    all[2] = "-c";
    all[3] = "1024";
    System.arraycopy(args, 0, all, 4, args.length);
    return TestSupport.cliRun(VL.toString(), 6, all);
  }

  @Test
  void imagesByPathBytesAndChatPartsEqualGeniexRun() throws Exception {
    try (Model m = new ModelBuilder(VL.toString()).mmproj(MMPROJ.toString()).device(Device.CPU)
        .threads(2).contextSize(1024).build()) {
      assertEquals("<image>", m.info().imageMarker());
      TestSupport.CliRun want = cli("--raw", "--image", CAT.toString(), "--image",
          COFFEE.toString(), "-p", "<image> vs <image>:");
      Generation byPath = m.generate("<image> vs <image>:",
          Arrays.asList(Image.fromFile(CAT.toString()), Image.fromFile(COFFEE.toString())),
          TestSupport.greedy(6), null);
      assertArrayEquals(want.promptTokens, byPath.promptTokens());
      assertArrayEquals(want.tokens, byPath.tokens());
      Generation byBytes = m.generate("<image> vs <image>:",
          Arrays.asList(Image.fromBytes(Files.readAllBytes(CAT)),
              Image.fromBytes(Files.readAllBytes(COFFEE))),
          TestSupport.greedy(6), null);
      assertArrayEquals(byPath.tokens(), byBytes.tokens());

      TestSupport.CliRun chatWant = cli("--image", CAT.toString(), "-p", "What is this?");
      Generation chat = m.chat(Collections.singletonList(ChatMessage.ofParts("user",
          Image.fromFile(CAT.toString()), "What is this?")), TestSupport.greedy(6), null);
      assertArrayEquals(chatWant.tokens, chat.tokens());

      // Bad images: the engine's error, and the model stays usable.
      GenieXException e = assertThrows(GenieXException.class, () -> m.generate("<image>x",
          Collections.singletonList(Image.fromBytes("not an image".getBytes("UTF-8"))),
          TestSupport.greedy(2), null));
      assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage().contains("image"), e.getMessage());
      assertThrows(GenieXException.class, () -> m.generate("<image>x",
          Collections.singletonList(Image.fromFile("/no/such/file.png")), TestSupport.greedy(2),
          null));
      assertEquals(2, m.generate("<image>x", Collections.singletonList(
          Image.fromFile(CAT.toString())), TestSupport.greedy(2), null).tokens().length);
    }
  }
}
