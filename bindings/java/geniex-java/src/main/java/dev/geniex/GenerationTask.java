package dev.geniex;

import java.util.concurrent.CompletableFuture;

/**
 * A generation running on an executor ({@link Model#generateAsync}). {@link #cancel()}, and
 * {@code result().cancel(true)}, stop it at its next step (prefill chunk or token); the result
 * then completes with {@link StopReason#CANCELLED} and the text made so far, or, when the future
 * itself was cancelled, as a cancelled future.
 */
public final class GenerationTask {
  private final CancelHandle handle;
  private final CompletableFuture<Generation> future;

  GenerationTask(CancelHandle handle) {
    this.handle = handle;
    this.future = new CompletableFuture<Generation>() {
      @Override
      public boolean cancel(boolean mayInterruptIfRunning) {
        handle.cancel();
        return super.cancel(mayInterruptIfRunning);
      }
    };
  }

  /** Completes with the Generation, or exceptionally with its GenieXException / listener error. */
  public CompletableFuture<Generation> result() {
    return future;
  }

  /** Stops the generation (safe from any thread, any number of times). */
  public void cancel() {
    handle.cancel();
  }

  CompletableFuture<Generation> future() {
    return future;
  }
}
