package dev.geniex;

/**
 * The JNI library's entry points (registered by its JNI_OnLoad; bindings/java/jni). Text is UTF-8
 * byte arrays; handles are native pointers owned by {@link Model} and {@link CancelHandle}.
 */
final class NativeBridge {
  static {
    NativeLoader.load();
  }

  private NativeBridge() {}

  /** Makes sure the library is loaded (throws UnsatisfiedLinkError when it cannot be). */
  static void ensureLoaded() {}

  static native long load(byte[] path, int device, int[] ints, byte[] pluginDir, byte[] mmproj);

  static native void free(long model);

  static native int[] tokenize(long model, byte[] text, boolean addSpecial, boolean parseSpecial);

  static native byte[] detokenize(long model, int[] tokens);

  static native void reset(long model);

  static native void saveState(long model, byte[] path);

  static native void loadState(long model, byte[] path);

  static native long[] engineStats(long model);

  static native ModelInfo info(long model);

  static native long newCancel();

  static native void cancel(long cancel);

  static native void freeCancel(long cancel);

  static native Generation generate(long model, byte[] prompt, int[] tokens, byte[][] imagePaths,
      byte[][] imageBytes, int[] cfgInts, float[] cfgFloats, long seed, byte[][] stops,
      byte[] schema, long cancel, PieceSink sink);

  static native Generation chat(long model, byte[][] roles, byte[][] contents, int[] partCounts,
      int[] partTypes, byte[][] partTexts, byte[][] partBytes, int[] cfgInts, float[] cfgFloats,
      long seed, byte[][] stops, byte[] schema, long cancel, PieceSink sink);

  static native byte[] applyChatTemplate(long model, byte[][] roles, byte[][] contents,
      int[] partCounts, int[] partTypes, byte[][] partTexts, byte[][] partBytes,
      boolean addGenerationPrompt);

  static native byte[][] drainLog(long model);

  static native float[] logits(long model, int[] tokens, int firstRow);

  static native long upcallNanos(PieceSink sink, int n);
}
