package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The upcall path generate uses, measured alone (bench/java_bench.sh's JNI cost per piece). */
class DiagnosticsTest {
  @Test
  void upcallsReachTheListenerAndStopWhenItSaysSo() {
    AtomicInteger calls = new AtomicInteger();
    double ns = Diagnostics.nanosPerPiece((text, token) -> {
      assertEquals(" token", text);
      assertEquals(42, token);
      calls.incrementAndGet();
      return true;
    }, 1000);
    assertEquals(1000, calls.get());
    assertTrue(ns > 0);
    calls.set(0);
    Diagnostics.nanosPerPiece((text, token) -> calls.incrementAndGet() < 3, 1000);
    assertEquals(3, calls.get());
    RuntimeException boom = new RuntimeException("boom");
    assertSame(boom, assertThrows(RuntimeException.class,
        () -> Diagnostics.nanosPerPiece((text, token) -> {
          throw boom;
        }, 10)));
  }
}
