package dev.geniex;

/** Measurements of the binding itself (bench/java_bench.sh). */
public final class Diagnostics {
  private Diagnostics() {}

  /**
   * Nanoseconds the JNI layer spends per generated piece, measured without a model: {@code n}
   * upcalls exactly as generate makes them (a new byte[], the listener call, the exception
   * check, the local reference freed, UTF-8 decoding in Java) to {@code listener}.
   */
  public static double nanosPerPiece(TokenListener listener, int n) {
    if (n <= 0) {
      throw new IllegalArgumentException("n must be > 0");
    }
    return NativeBridge.upcallNanos(new PieceSink(listener), n) / (double) n;
  }
}
