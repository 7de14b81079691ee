package dev.geniex;

import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * A loaded model (C++ {@code geniex::Model}). Thread-safe: any thread may call, concurrent
 * generations share each forward pass (continuous batching). Methods block (on Android, never
 * call them on the main thread). Listeners run on the calling thread; interrupting that thread
 * stops its generation at the next token ({@link StopReason#CANCELLED}). {@link #close()} cancels
 * the generations in flight, waits for every call to return and frees the model; later calls
 * throw {@link IllegalStateException}.
 */
public final class Model implements AutoCloseable {
  private static final ExecutorService ASYNC = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "geniex-generate");
    t.setDaemon(true);
    return t;
  });

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final Set<CancelHandle> inFlight = ConcurrentHashMap.newKeySet();
  private volatile boolean closing;
  private long handle;
  private final Consumer<String> logger;

  Model(long handle, Consumer<String> logger) {
    this.handle = handle;
    this.logger = logger;
  }

  // Hands the queued engine log lines to the logger, on this thread.
  void deliverLog() {
    if (logger == null) {
      return;
    }
    byte[][] lines;
    try {
      lines = with(NativeBridge::drainLog);
    } catch (IllegalStateException closed) {
      return;  // closed meanwhile: nothing more to say
    }
    if (lines != null) {
      for (byte[] line : lines) {
        logger.accept(Utf8.string(line));
      }
    }
  }

  private interface Call<T> {
    T run(long handle);
  }

  // Runs `call` under the read lock (close() takes the write lock): the handle stays valid.
  private <T> T with(Call<T> call) {
    lock.readLock().lock();
    try {
      if (closing || handle == 0) {
        throw new IllegalStateException("the model is closed");
      }
      return call.run(handle);
    } finally {
      lock.readLock().unlock();
    }
  }

  // A generation: its cancel handle is registered before `closing` is checked, so close()
  // either sees it and cancels it, or the call sees `closing` and throws.
  private Generation generation(CancelHandle cancel, Call<Generation> call) {
    inFlight.add(cancel);
    try {
      return with(call);
    } finally {
      inFlight.remove(cancel);
      if (logger != null && !closing) {
        deliverLog();
      }
    }
  }

  /** Completes raw text (no chat template); {@code cfg} and {@code listener} may be null. */
  public Generation generate(String prompt, GenerationConfig cfg, TokenListener listener) {
    return generate(prompt, null, cfg, listener);
  }

  public Generation generate(String prompt) {
    return generate(prompt, null, null, null);
  }

  /**
   * Completes raw text with images (a vision-language model): image i goes where the prompt has
   * its i-th {@link ModelInfo#imageMarker()}; images beyond the markers go before the text.
   */
  public Generation generate(String prompt, List<Image> images, GenerationConfig cfg,
      TokenListener listener) {
    Objects.requireNonNull(prompt, "prompt");
    CancelHandle cancel = new CancelHandle();
    try {
      return generateText(prompt, images, cfg, listener, cancel);
    } finally {
      cancel.free();
    }
  }

  /** Completes from token ids. */
  public Generation generate(int[] tokens, GenerationConfig cfg, TokenListener listener) {
    Objects.requireNonNull(tokens, "tokens");
    CancelHandle cancel = new CancelHandle();
    try {
      GenerationConfig c = cfg != null ? cfg : GenerationConfig.defaults();
      return generation(cancel, h -> NativeBridge.generate(h, null, tokens.clone(), null, null,
          c.packedInts(), c.packedFloats(), c.packedSeed(), c.packedStops(),
          Utf8.bytes(c.jsonSchema()), cancel.ptr(), new PieceSink(listener)));
    } finally {
      cancel.free();
    }
  }

  /** Applies the model's chat template and generates the reply. */
  public Generation chat(List<ChatMessage> messages, GenerationConfig cfg,
      TokenListener listener) {
    CancelHandle cancel = new CancelHandle();
    try {
      return chatWith(messages, cfg, listener, cancel);
    } finally {
      cancel.free();
    }
  }

  /** generate() on {@code executor}; cancel through the task or its future. */
  public GenerationTask generateAsync(String prompt, GenerationConfig cfg,
      TokenListener listener, Executor executor) {
    Objects.requireNonNull(prompt, "prompt");
    return submit(cancel -> generateText(prompt, null, cfg, listener, cancel), executor);
  }

  /** generate() on a shared pool of daemon threads. */
  public GenerationTask generateAsync(String prompt, GenerationConfig cfg,
      TokenListener listener) {
    return generateAsync(prompt, cfg, listener, ASYNC);
  }

  /** chat() on {@code executor}. */
  public GenerationTask chatAsync(List<ChatMessage> messages, GenerationConfig cfg,
      TokenListener listener, Executor executor) {
    Objects.requireNonNull(messages, "messages");
    return submit(cancel -> chatWith(messages, cfg, listener, cancel), executor);
  }

  private interface Job {
    Generation run(CancelHandle cancel);
  }

  private GenerationTask submit(Job job, Executor executor) {
    CancelHandle cancel = new CancelHandle();
    GenerationTask task = new GenerationTask(cancel);
    Runnable run = () -> {
      try {
        task.future().complete(job.run(cancel));
      } catch (Throwable t) {
        task.future().completeExceptionally(t);
      } finally {
        cancel.free();
      }
    };
    try {
      (executor != null ? executor : ASYNC).execute(run);
    } catch (RejectedExecutionException e) {
      cancel.free();
      task.future().completeExceptionally(e);
    }
    return task;
  }

  private Generation generateText(String prompt, List<Image> images, GenerationConfig cfg,
      TokenListener listener, CancelHandle cancel) {
    GenerationConfig c = cfg != null ? cfg : GenerationConfig.defaults();
    byte[][] paths = null;
    byte[][] bytes = null;
    if (images != null && !images.isEmpty()) {
      paths = new byte[images.size()][];
      bytes = new byte[images.size()][];
      for (int i = 0; i < images.size(); i++) {
        Image img = Objects.requireNonNull(images.get(i), "image " + i);
        paths[i] = Utf8.bytes(img.path());
        bytes[i] = img.rawBytes();
      }
    }
    byte[] text = Utf8.bytes(prompt);
    byte[][] p = paths;
    byte[][] b = bytes;
    return generation(cancel, h -> NativeBridge.generate(h, text, null, p, b, c.packedInts(),
        c.packedFloats(), c.packedSeed(), c.packedStops(), Utf8.bytes(c.jsonSchema()),
        cancel.ptr(), new PieceSink(listener)));
  }

  private Generation chatWith(List<ChatMessage> messages, GenerationConfig cfg,
      TokenListener listener, CancelHandle cancel) {
    GenerationConfig c = cfg != null ? cfg : GenerationConfig.defaults();
    ChatMessages m = new ChatMessages(new ArrayList<>(messages));
    return generation(cancel, h -> NativeBridge.chat(h, m.roles, m.contents, m.partCounts,
        m.partTypes, m.partTexts, m.partBytes, c.packedInts(), c.packedFloats(), c.packedSeed(),
        c.packedStops(), Utf8.bytes(c.jsonSchema()), cancel.ptr(), new PieceSink(listener)));
  }

  /** The chat template's rendering of {@code messages}. */
  public String applyChatTemplate(List<ChatMessage> messages, boolean addGenerationPrompt) {
    ChatMessages m = new ChatMessages(new ArrayList<>(messages));
    return Utf8.string(with(h -> NativeBridge.applyChatTemplate(h, m.roles, m.contents,
        m.partCounts, m.partTypes, m.partTexts, m.partBytes, addGenerationPrompt)));
  }

  public int[] tokenize(String text, boolean addSpecial, boolean parseSpecial) {
    byte[] b = Utf8.bytes(Objects.requireNonNull(text, "text"));
    return with(h -> NativeBridge.tokenize(h, b, addSpecial, parseSpecial));
  }

  public String detokenize(int[] tokens) {
    int[] ids = Objects.requireNonNull(tokens, "tokens").clone();
    return Utf8.string(with(h -> NativeBridge.detokenize(h, ids)));
  }

  /**
   * Logits of positions {@code firstRow .. tokens.length-1} of {@code tokens}, evaluated from an
   * empty context: {@code (tokens.length - firstRow) * info().nVocab()} floats, row after row.
   */
  public FloatBuffer logits(int[] tokens, int firstRow) {
    int[] ids = Objects.requireNonNull(tokens, "tokens").clone();
    return FloatBuffer.wrap(with(h -> NativeBridge.logits(h, ids, firstRow)));
  }

  /** Forgets the cached context. */
  public void reset() {
    with(h -> {
      NativeBridge.reset(h);
      return null;
    });
  }

  /** Writes the cached context (tokens and KV) to {@code path}. */
  public void saveState(String path) {
    byte[] p = Utf8.bytes(Objects.requireNonNull(path, "path"));
    with(h -> {
      NativeBridge.saveState(h, p);
      return null;
    });
  }

  /** Replaces the cached context with a saved one (DATA_LOSS for a corrupt file). */
  public void loadState(String path) {
    byte[] p = Utf8.bytes(Objects.requireNonNull(path, "path"));
    with(h -> {
      NativeBridge.loadState(h, p);
      return null;
    });
  }

  public ModelInfo info() {
    return with(NativeBridge::info);
  }

  public EngineStats engineStats() {
    return new EngineStats(with(NativeBridge::engineStats));
  }

  public boolean isClosed() {
    return closing;
  }

  /**
   * Cancels the generations in flight, waits for every call on this model to return, frees it.
   * Idempotent. Calling it from a listener of this model is an IllegalStateException (it would
   * wait for itself).
   */
  @Override
  public void close() {
    if (lock.getReadHoldCount() > 0) {
      throw new IllegalStateException("close() from inside a call on the same model");
    }
    closing = true;
    for (CancelHandle c : inFlight) {
      c.cancel();
    }
    lock.writeLock().lock();
    try {
      if (handle != 0) {
        NativeBridge.free(handle);
        handle = 0;
      }
    } finally {
      lock.writeLock().unlock();
    }
  }
}
