package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Paths the build passes in (pom.xml: surefire's systemPropertyVariables) and `geniex run`. */
final class TestSupport {
  private TestSupport() {}

  static Path root() {
    return Paths.get(System.getProperty("geniex.root", "../../..")).toAbsolutePath().normalize();
  }

  /** Gemma 3 270M Q4_K_M (scripts/setup.sh fetches it); a missing file fails the tests. */
  static String gemma() {
    String p = System.getProperty("geniex.test.model");
    assertTrue(p != null && new File(p).isFile(), "the test model is missing: " + p
        + " (scripts/setup.sh fetches it)");
    return p;
  }

  static Path models() {
    return root().resolve("tests/data/models");
  }

  static Path cli() {
    Path p = Paths.get(System.getProperty("geniex.cli", ""));
    assertTrue(Files.isExecutable(p), "the geniex CLI is missing: " + p);
    return p;
  }

  static Model gemmaModel() {
    return new ModelBuilder(gemma()).device(Device.CPU).threads(2).contextSize(1024).build();
  }

  static GenerationConfig greedy(int n) {
    return GenerationConfig.builder().maxTokens(n).temperature(0).build();
  }

  /** What `geniex run --json` printed: the fields the tests compare. */
  static final class CliRun {
    String text;
    int[] promptTokens;
    int[] tokens;
    String stopReason;
  }

  /** `geniex run -m MODEL --temp 0 -n N -t 2 --json ARGS...` (the CLI prints raw UTF-8). */
  static CliRun cliRun(String model, int n, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(Arrays.asList(cli().toString(), "run", "-m", model,
        "--temp", "0", "-n", Integer.toString(n), "-t", "2", "--json"));
    cmd.addAll(Arrays.asList(args));
    Path out = Files.createTempFile("geniex-run", ".json");
    try {
      Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile())
          .redirectError(ProcessBuilder.Redirect.DISCARD).start();
      assertTrue(p.waitFor(300, TimeUnit.SECONDS), "geniex run timed out");
      assertEquals(0, p.exitValue(), "geniex run failed: " + cmd);
      String json = new String(Files.readAllBytes(out), StandardCharsets.UTF_8);
      CliRun r = new CliRun();
      r.text = jsonString(json, "text");
      r.promptTokens = jsonInts(json, "prompt_token_ids");
      r.tokens = jsonInts(json, "token_ids");
      r.stopReason = jsonString(json, "stop_reason");
      return r;
    } finally {
      Files.deleteIfExists(out);
    }
  }

  // The first "key": "..." string of a JSON document, unescaped.
  static String jsonString(String json, String key) {
    int i = json.indexOf("\"" + key + "\":");
    assertTrue(i >= 0, "no " + key + " in " + json);
    i = json.indexOf('"', i + key.length() + 3) + 1;
    StringBuilder sb = new StringBuilder();
    while (json.charAt(i) != '"') {
      char c = json.charAt(i++);
      if (c != '\\') {
        sb.append(c);
        continue;
      }
      char e = json.charAt(i++);
      switch (e) {
        case 'n': sb.append('\n'); break;
        case 't': sb.append('\t'); break;
        case 'r': sb.append('\r'); break;
        case 'b': sb.append('\b'); break;
        case 'f': sb.append('\f'); break;
        case 'u':
          sb.append((char) Integer.parseInt(json.substring(i, i + 4), 16));
          i += 4;
          break;
        default: sb.append(e);
      }
    }
    return sb.toString();
  }

  static int[] jsonInts(String json, String key) {
    Matcher m = Pattern.compile("\"" + key + "\":\\[([0-9,\\s]*)\\]").matcher(json);
    assertTrue(m.find(), "no " + key);
    String body = m.group(1).trim();
    if (body.isEmpty()) {
      return new int[0];
    }
    return Arrays.stream(body.split(",")).map(String::trim).mapToInt(Integer::parseInt).toArray();
  }

  /** Polls until the engine reports no active or queued request (fails after 30 s). */
  static void awaitIdle(Model m) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      EngineStats s = m.engineStats();
      if (s.active() == 0 && s.queued() == 0) {
        return;
      }
      Thread.sleep(5);
    }
    EngineStats s = m.engineStats();
    assertEquals(0, s.active(), "active requests");
  }
}
