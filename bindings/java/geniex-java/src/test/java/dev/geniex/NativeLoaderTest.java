package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The three ways the library is found: geniex.library.path, java.library.path, the jar. */
class NativeLoaderTest {
  static final String TINY = TestSupport.models().resolve("tiny-llama-q8_0.gguf").toString();

  // A child JVM running LoaderProbe with this test's classpath and the given -D options.
  static String probe(String... options) throws Exception {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new java.util.ArrayList<>(Arrays.asList(java, "-Xcheck:jni"));
    cmd.addAll(Arrays.asList(options));
    cmd.addAll(Arrays.asList("-cp", System.getProperty("java.class.path"),
        LoaderProbe.class.getName(), TINY));
    Path out = Files.createTempFile("probe", ".txt");
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile())
          .start();
      assertTrue(p.waitFor(120, TimeUnit.SECONDS));
      String text = new String(Files.readAllBytes(out), StandardCharsets.UTF_8);
      assertEquals(0, p.exitValue(), text);
      assertTrue(text.contains("tokens=3"), text);
      assertTrue(!text.contains("WARNING in native method"), text);
      return text;
    } finally {
      Files.deleteIfExists(out);
    }
  }

  @Test
  void thisSuiteLoadsTheLibraryNamedByTheProperty() {
    NativeBridge.ensureLoaded();
    assertTrue(NativeLoader.loadedFrom.startsWith("property:"), NativeLoader.loadedFrom);
  }

  @Test
  void javaLibraryPathThenTheJarsCopy() throws Exception {
    String dir = System.getProperty("geniex.library.path");
    assertTrue(new File(dir, System.mapLibraryName("geniex_jni")).isFile(), dir);
    assertTrue(probe("-Djava.library.path=" + dir).contains("loaded=system"));
    // No property, nothing on java.library.path: the copy packed under /native/linux-ARCH/.
    String text = probe("-Djava.library.path=/nonexistent");
    assertTrue(text.contains("loaded=jar:"), text);
    assertEquals(NativeLoader.platform().startsWith("linux-"), true);
  }
}
