package dev.geniex;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads libgeniex_jni: the {@code geniex.library.path} system property (the file, or a folder
 * holding it), else {@code System.loadLibrary("geniex_jni")} (java.library.path; Android's
 * nativeLibraryDir), else the copy packed in this jar under /native/linux-ARCH/, extracted to a
 * temporary file.
 */
final class NativeLoader {
  static final String LIBRARY = "geniex_jni";
  static final String PROPERTY = "geniex.library.path";

  /** How the library was found: "property:FILE", "system", or "jar:FILE" (the extracted copy). */
  static volatile String loadedFrom = "";

  private NativeLoader() {}

  static synchronized void load() {
    String explicit = System.getProperty(PROPERTY);
    if (explicit != null && !explicit.isEmpty()) {
      File f = new File(explicit);
      if (f.isDirectory()) {
        f = new File(f, System.mapLibraryName(LIBRARY));
      }
      System.load(f.getAbsolutePath());
      loadedFrom = "property:" + f.getAbsolutePath();
      return;
    }
    UnsatisfiedLinkError first;
    try {
      System.loadLibrary(LIBRARY);
      loadedFrom = "system";
      return;
    } catch (UnsatisfiedLinkError e) {
      first = e;
    }
    String resource = "/native/" + platform() + "/" + System.mapLibraryName(LIBRARY);
    try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
      if (in == null) {
        UnsatisfiedLinkError e = new UnsatisfiedLinkError("geniex: no " + LIBRARY + " found: set -D"
            + PROPERTY + "=FILE, put it on java.library.path, or use a jar that packs " + resource);
        e.addSuppressed(first);
        throw e;
      }
      Path dir = Files.createTempDirectory("geniex-jni");
      Path lib = dir.resolve(System.mapLibraryName(LIBRARY));
      Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
      lib.toFile().deleteOnExit();
      dir.toFile().deleteOnExit();
      System.load(lib.toAbsolutePath().toString());
      loadedFrom = "jar:" + lib.toAbsolutePath();
    } catch (IOException e) {
      UnsatisfiedLinkError err = new UnsatisfiedLinkError("geniex: cannot extract " + resource
          + ": " + e.getMessage());
      err.initCause(e);
      throw err;
    }
  }

  /** "linux-x86_64" or "linux-aarch64" (the jar's folder names). */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64") || arch.equals("x86_64")) {
      arch = "x86_64";
    } else if (arch.equals("aarch64") || arch.equals("arm64")) {
      arch = "aarch64";
    }
    return (os.contains("linux") ? "linux" : os.replace(' ', '_')) + "-" + arch;
  }
}
