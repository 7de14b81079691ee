package dev.geniex;

import java.util.Objects;

/**
 * An image for a vision-language model (a model built with {@link ModelBuilder#mmproj}): a JPEG,
 * PNG, BMP, GIF or WebP file by path, or its encoded bytes.
 */
public final class Image {
  private final String path;
  private final byte[] bytes;

  private Image(String path, byte[] bytes) {
    this.path = path;
    this.bytes = bytes;
  }

  public static Image fromFile(String path) {
    return new Image(Objects.requireNonNull(path, "path"), null);
  }

  public static Image fromBytes(byte[] encoded) {
    return new Image(null, Objects.requireNonNull(encoded, "encoded").clone());
  }

  /** The path, or null for an image given as bytes. */
  public String path() {
    return path;
  }

  byte[] rawBytes() {
    return bytes;
  }
}
