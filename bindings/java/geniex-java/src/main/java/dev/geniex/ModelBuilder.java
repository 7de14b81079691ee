package dev.geniex;

import java.util.Objects;
import java.util.function.Consumer;

/**
 * Configures and loads a {@link Model}: {@code new ModelBuilder(path).device(Device.CPU)
 * .contextSize(2048).threads(4).build()}. The path is a real file (it is memory-mapped), not a
 * content:// URI or an APK asset.
 */
public final class ModelBuilder {
  private final String path;
  private Device device = Device.AUTO;
  private int offloadLayers = -1;
  private int contextSize = 4096;
  private int threads = 0;
  private int batchSize = 512;
  private int maxSequences = 4;
  private KvCacheType kvCacheType = KvCacheType.F16;
  private String pluginDir = "";
  private String mmproj = "";
  private boolean deterministic = false;
  private Consumer<String> logger = null;

  public ModelBuilder(String path) {
    this.path = Objects.requireNonNull(path, "path");
  }

  public ModelBuilder device(Device d) {
    device = Objects.requireNonNull(d, "device");
    return this;
  }

  /**
   * Decoder layers on the device's accelerator: the last n (and the output head when n >= 1),
   * the rest on the CPU; 0 = all on the CPU; -1 (default) = no limit. build() refuses n < -1.
   */
  public ModelBuilder offloadLayers(int n) {
    offloadLayers = n;
    return this;
  }

  /** Context window in tokens (default 4096, capped at the model's; 0 = the model's). */
  public ModelBuilder contextSize(int n) {
    contextSize = n;
    return this;
  }

  /** Worker threads (default 0: the CPUs this process may use). */
  public ModelBuilder threads(int n) {
    threads = n;
    return this;
  }

  /** Largest number of prompt tokens evaluated in one step (default 512). */
  public ModelBuilder batchSize(int n) {
    batchSize = n;
    return this;
  }

  /** Generations batched at once across threads (default 4); more calls wait for a slot. */
  public ModelBuilder maxSequences(int n) {
    maxSequences = n;
    return this;
  }

  public ModelBuilder kvCacheType(KvCacheType t) {
    kvCacheType = Objects.requireNonNull(t, "kvCacheType");
    return this;
  }

  /** Folder of NPU plugins (default: a {@code plugins} folder beside the JNI library). */
  public ModelBuilder pluginDir(String dir) {
    pluginDir = Objects.requireNonNull(dir, "dir");
    return this;
  }

  /** The mmproj GGUF that makes this a vision-language model (images in generate/chat). */
  public ModelBuilder mmproj(String file) {
    mmproj = Objects.requireNonNull(file, "file");
    return this;
  }

  /**
   * Receives the engine's log lines (placement decisions, fallbacks). Lines from engine threads
   * are queued natively and delivered on the thread that called build/generate/chat, after the
   * call. Default: none.
   */
  public ModelBuilder logger(Consumer<String> l) {
    logger = l;
    return this;
  }

  /**
   * Bit-identical output whether a request runs alone or batched with others (default off;
   * slower decode for Q8_0/Q5_0/Q4_0 weights; process-wide once one model asks for it).
   */
  public ModelBuilder deterministic(boolean on) {
    deterministic = on;
    return this;
  }

  /** Loads the model; a missing or corrupt file is a {@link GenieXException}. */
  public Model build() {
    int[] ints = {
      contextSize, threads, batchSize, maxSequences, kvCacheType.ordinal(), deterministic ? 1 : 0,
      logger != null ? 1 : 0, offloadLayers
    };
    long handle = NativeBridge.load(Utf8.bytes(path), device.ordinal(), ints,
        Utf8.bytes(pluginDir), Utf8.bytes(mmproj));
    Model m = new Model(handle, logger);
    m.deliverLog();
    return m;
  }
}
