package dev.geniex;

/**
 * A native CancelToken for one generation. cancel() may come from any thread at any time (before
 * the generation starts, during it, after it ended); free() is called once by the generation's
 * owner when it is over.
 */
final class CancelHandle {
  private long ptr;
  private boolean cancelled;

  CancelHandle() {
    ptr = NativeBridge.newCancel();
  }

  synchronized long ptr() {
    return ptr;
  }

  synchronized void cancel() {
    cancelled = true;
    if (ptr != 0) {
      NativeBridge.cancel(ptr);
    }
  }

  synchronized boolean isCancelled() {
    return cancelled;
  }

  synchronized void free() {
    if (ptr != 0) {
      NativeBridge.freeCancel(ptr);
      ptr = 0;
    }
  }
}
