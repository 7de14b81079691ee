package dev.geniex;

/**
 * Receives each piece of generated text as soon as it is final, on the thread that called
 * generate/chat. Keep it quick and do not call the same model from it. An exception thrown here
 * stops the generation and propagates out of generate/chat; the model stays usable.
 */
@FunctionalInterface
public interface TokenListener {
  /**
   * @param text the piece (whole UTF-8 characters)
   * @param token the token that completed it
   * @return false to stop: the generation ends with {@link StopReason#CANCELLED}
   */
  boolean onToken(String text, int token);
}
