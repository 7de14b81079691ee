package dev.geniex;

/** The engine's error classes ({@code geniex::StatusCode}, same order). */
public enum StatusCode {
  OK,
  INVALID_ARGUMENT,
  NOT_FOUND,
  OUT_OF_RANGE,
  DATA_LOSS,
  UNIMPLEMENTED,
  RESOURCE_EXHAUSTED,
  IO_ERROR,
  INTERNAL;

  static StatusCode of(int ordinal) {
    StatusCode[] all = values();
    return ordinal >= 0 && ordinal < all.length ? all[ordinal] : INTERNAL;
  }
}
