package dev.geniex;

import java.nio.charset.StandardCharsets;

/** An engine error: the engine's {@link StatusCode} and its message (unchecked). */
public class GenieXException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final StatusCode code;

  public GenieXException(StatusCode code, String message) {
    super(code + ": " + message);
    this.code = code;
  }

  // Called by the JNI library: the message arrives as UTF-8 bytes.
  GenieXException(int code, byte[] message) {
    this(StatusCode.of(code), new String(message, StandardCharsets.UTF_8));
  }

  /** The engine's error class. */
  public StatusCode code() {
    return code;
  }
}
