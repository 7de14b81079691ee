package dev.geniex;

/** The batching engine's counters (C++ {@code geniex::EngineStats}). */
public final class EngineStats {
  private final long steps;
  private final long batchedTokens;
  private final int active;
  private final int queued;
  private final long fallbacks;

  EngineStats(long[] v) {
    steps = v[0];
    batchedTokens = v[1];
    active = (int) v[2];
    queued = (int) v[3];
    fallbacks = v[4];
  }

  /** Forward passes run. */
  public long steps() {
    return steps;
  }

  public long batchedTokens() {
    return batchedTokens;
  }

  /** Requests holding a sequence (generating now). */
  public int active() {
    return active;
  }

  /** Requests waiting for a sequence. */
  public int queued() {
    return queued;
  }

  public long fallbacks() {
    return fallbacks;
  }
}
