package dev.geniex;

import java.nio.charset.StandardCharsets;

/** Text crosses the JNI boundary as UTF-8 byte arrays, never as modified UTF-8. */
final class Utf8 {
  private Utf8() {}

  static byte[] bytes(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  static String string(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
