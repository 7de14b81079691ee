package dev.geniex;

/** Why a generation ended ({@code geniex::StopReason}, same order). */
public enum StopReason {
  /** The model emitted an end-of-generation token. */
  END_OF_GENERATION("eog"),
  /** {@link GenerationConfig#maxTokens()} reached. */
  MAX_TOKENS("length"),
  /** A stop string appeared (it is not part of the text). */
  STOP_STRING("stop"),
  /** The listener returned false, or the generation was cancelled. */
  CANCELLED("cancelled"),
  /** The context window has no room for another token. */
  CONTEXT_FULL("context_full");

  private final String engineName;

  StopReason(String engineName) {
    this.engineName = engineName;
  }

  /** The engine's name ("eog", "length", ...), as {@code geniex run --json} prints it. */
  public String engineName() {
    return engineName;
  }

  static StopReason of(int ordinal) {
    return values()[ordinal];
  }
}
