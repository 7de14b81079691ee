package dev.geniex;

import java.nio.charset.StandardCharsets;

/**
 * What the JNI library calls for each piece (UTF-8 bytes, decoded here: JNI's modified UTF-8
 * would break emoji). Stops the generation when the calling thread is interrupted.
 */
final class PieceSink {
  private final TokenListener listener;

  PieceSink(TokenListener listener) {
    this.listener = listener;
  }

  // Called from native code (signature ([BI)Z, cached in JNI_OnLoad).
  boolean onToken(byte[] text, int token) {
    if (Thread.currentThread().isInterrupted()) {
      return false;
    }
    if (listener == null) {
      return true;
    }
    return listener.onToken(new String(text, StandardCharsets.UTF_8), token);
  }
}
