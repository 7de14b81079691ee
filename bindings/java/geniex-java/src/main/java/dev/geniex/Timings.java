package dev.geniex;

/** Speed of one generation (C++ {@code geniex::Timings}). */
public final class Timings {
  private final int promptTokens;
  private final int cachedTokens;
  private final int generatedTokens;
  private final double promptMs;
  private final double generationMs;
  private final double ttftMs;

  Timings(double[] v) {
    promptTokens = (int) v[0];
    cachedTokens = (int) v[1];
    generatedTokens = (int) v[2];
    promptMs = v[3];
    generationMs = v[4];
    ttftMs = v[5];
  }

  public int promptTokens() {
    return promptTokens;
  }

  public int cachedTokens() {
    return cachedTokens;
  }

  public int generatedTokens() {
    return generatedTokens;
  }

  public double promptMs() {
    return promptMs;
  }

  public double generationMs() {
    return generationMs;
  }

  public double ttftMs() {
    return ttftMs;
  }

  /** Decode speed as the engine counts it. */
  public double generationTokensPerSecond() {
    return generationMs > 0 ? generatedTokens * 1000.0 / generationMs : 0.0;
  }

  public double promptTokensPerSecond() {
    int evaluated = promptTokens - cachedTokens;
    return promptMs > 0 ? evaluated * 1000.0 / promptMs : 0.0;
  }
}
