package dev.geniex;

/** A piece of generated text and the token that completed it. */
public final class Piece {
  private final String text;
  private final int token;

  public Piece(String text, int token) {
    this.text = text;
    this.token = token;
  }

  public String text() {
    return text;
  }

  public int token() {
    return token;
  }

  @Override
  public String toString() {
    return "Piece(" + text + ", " + token + ")";
  }
}
