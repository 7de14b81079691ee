package dev.geniex;

/** Facts about a loaded model (C++ {@code geniex::ModelInfo}). */
public final class ModelInfo {
  private final String path;
  private final String architecture;
  private final String name;
  private final String chatTemplateOrigin;
  private final String placement;
  private final String mmprojPath;
  private final String imageMarker;
  private final long nParams;
  private final long fileBytes;
  private final int nLayer;
  private final int nEmbd;
  private final int nVocab;
  private final int nCtxTrain;
  private final int nCtx;
  private final int nThreads;
  private final int bosToken;
  private final boolean addBos;

  // Called by the JNI library (jni_model.cpp: native_info).
  ModelInfo(byte[][] s, long[] n) {
    path = Utf8.string(s[0]);
    architecture = Utf8.string(s[1]);
    name = Utf8.string(s[2]);
    chatTemplateOrigin = Utf8.string(s[3]);
    placement = Utf8.string(s[4]);
    mmprojPath = Utf8.string(s[5]);
    imageMarker = Utf8.string(s[6]);
    nParams = n[0];
    fileBytes = n[1];
    nLayer = (int) n[2];
    nEmbd = (int) n[3];
    nVocab = (int) n[4];
    nCtxTrain = (int) n[5];
    nCtx = (int) n[6];
    nThreads = (int) n[7];
    bosToken = (int) n[8];
    addBos = n[9] != 0;
  }

  public String path() {
    return path;
  }

  public String architecture() {
    return architecture;
  }

  public String name() {
    return name;
  }

  public String chatTemplateOrigin() {
    return chatTemplateOrigin;
  }

  public String placement() {
    return placement;
  }

  public String mmprojPath() {
    return mmprojPath;
  }

  /** The text marking an image's place in a raw prompt ("" without an mmproj). */
  public String imageMarker() {
    return imageMarker;
  }

  public long nParams() {
    return nParams;
  }

  public long fileBytes() {
    return fileBytes;
  }

  public int nLayer() {
    return nLayer;
  }

  public int nEmbd() {
    return nEmbd;
  }

  public int nVocab() {
    return nVocab;
  }

  public int nCtxTrain() {
    return nCtxTrain;
  }

  public int nCtx() {
    return nCtx;
  }

  public int nThreads() {
    return nThreads;
  }

  public int bosToken() {
    return bosToken;
  }

  public boolean addBos() {
    return addBos;
  }
}
