package dev.geniex;

/** The result of generate/chat (C++ {@code geniex::Generation}). */
public final class Generation {
  private final String text;
  private final int[] promptTokens;
  private final int[] tokens;
  private final StopReason stopReason;
  private final Timings timings;
  private final long seed;

  // Called by the JNI library.
  Generation(byte[] text, int[] promptTokens, int[] tokens, int stopReason, double[] timings,
      long seed) {
    this.text = Utf8.string(text);
    this.promptTokens = promptTokens;
    this.tokens = tokens;
    this.stopReason = StopReason.of(stopReason);
    this.timings = new Timings(timings);
    this.seed = seed;
  }

  /** Generated text (no stop string, no end-of-generation token text). */
  public String text() {
    return text;
  }

  /** What the model was fed. */
  public int[] promptTokens() {
    return promptTokens.clone();
  }

  /** Generated ids, a final end-of-generation token included. */
  public int[] tokens() {
    return tokens.clone();
  }

  public StopReason stopReason() {
    return stopReason;
  }

  public Timings timings() {
    return timings;
  }

  /** The sampler's seed (repeatable). */
  public long seed() {
    return seed;
  }
}
