package dev.geniex;

import java.util.ArrayList;
import java.util.List;

/** Chat messages flattened into arrays for the JNI library (jni_generate.cpp: read_messages). */
final class ChatMessages {
  final byte[][] roles;
  final byte[][] contents;
  final int[] partCounts;
  final int[] partTypes;  // 0 text, 1 image path, 2 image bytes
  final byte[][] partTexts;
  final byte[][] partBytes;

  ChatMessages(List<ChatMessage> messages) {
    int n = messages.size();
    roles = new byte[n][];
    contents = new byte[n][];
    partCounts = new int[n];
    List<Integer> types = new ArrayList<>();
    List<byte[]> texts = new ArrayList<>();
    List<byte[]> bytes = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ChatMessage m = messages.get(i);
      if (m == null) {
        throw new NullPointerException("message " + i);
      }
      roles[i] = Utf8.bytes(m.role());
      contents[i] = Utf8.bytes(m.content());
      partCounts[i] = m.parts().size();
      for (Object p : m.parts()) {
        if (p instanceof Image && ((Image) p).path() == null) {
          types.add(2);
          texts.add(new byte[0]);
          bytes.add(((Image) p).rawBytes());
        } else if (p instanceof Image) {
          types.add(1);
          texts.add(Utf8.bytes(((Image) p).path()));
          bytes.add(null);
        } else {
          types.add(0);
          texts.add(Utf8.bytes((String) p));
          bytes.add(null);
        }
      }
    }
    partTypes = types.stream().mapToInt(Integer::intValue).toArray();
    partTexts = texts.toArray(new byte[0][]);
    partBytes = bytes.toArray(new byte[0][]);
  }
}
