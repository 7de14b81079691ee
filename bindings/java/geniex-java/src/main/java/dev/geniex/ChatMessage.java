package dev.geniex;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * One chat turn: a role ("system", "user", "assistant") and text, or content parts (text and
 * images in order, for a vision-language model).
 */
public final class ChatMessage {
  private final String role;
  private final String content;
  private final List<Object> parts;  // String or Image

  private ChatMessage(String role, String content, List<Object> parts) {
    this.role = Objects.requireNonNull(role, "role");
    this.content = content;
    this.parts = parts;
  }

  public static ChatMessage of(String role, String content) {
    return new ChatMessage(role, Objects.requireNonNull(content, "content"),
        Collections.emptyList());
  }

  public static ChatMessage system(String content) {
    return of("system", content);
  }

  public static ChatMessage user(String content) {
    return of("user", content);
  }

  public static ChatMessage assistant(String content) {
    return of("assistant", content);
  }

  /** A message of parts: each a String (text) or an {@link Image}. */
  public static ChatMessage ofParts(String role, Object... parts) {
    List<Object> list = new ArrayList<>();
    for (Object p : parts) {
      if (!(p instanceof String) && !(p instanceof Image)) {
        throw new IllegalArgumentException("a content part is a String or an Image");
      }
      list.add(p);
    }
    if (list.isEmpty()) {
      list.add("");
    }
    return new ChatMessage(role, "", Collections.unmodifiableList(list));
  }

  public String role() {
    return role;
  }

  public String content() {
    return content;
  }

  /** The parts (String or Image); empty for a plain-text message. */
  public List<Object> parts() {
    return parts;
  }
}
