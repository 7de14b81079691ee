package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Cancel, listener errors, close() during a generation, and threads that batch. */
class GemmaThreadsTest {
  static final GenerationConfig LONG =
      GenerationConfig.builder().maxTokens(600).temperature(0).ignoreEos(true).build();

  @Test
  void cancelFromAnotherThreadStopsWithinAFewTokens() throws Exception {
    try (Model m = TestSupport.gemmaModel()) {
      AtomicInteger pieces = new AtomicInteger();
      CountDownLatch fifth = new CountDownLatch(1);
      GenerationTask task = m.generateAsync("Once upon a time", LONG, (text, token) -> {
        if (pieces.incrementAndGet() == 5) {
          fifth.countDown();
        }
        return true;
      });
      assertTrue(fifth.await(120, TimeUnit.SECONDS));
      task.cancel();
      Generation g = task.result().get(60, TimeUnit.SECONDS);
      assertEquals(StopReason.CANCELLED, g.stopReason());
      assertTrue(g.tokens().length < 5 + 10, "stopped after " + g.tokens().length + " tokens");
      TestSupport.awaitIdle(m);
      // Future.cancel(true) cancels too.
      CountDownLatch started = new CountDownLatch(1);
      GenerationTask t2 = m.generateAsync("Once upon a time", LONG, (text, token) -> {
        started.countDown();
        return true;
      });
      assertTrue(started.await(120, TimeUnit.SECONDS));
      assertTrue(t2.result().cancel(true));
      TestSupport.awaitIdle(m);
    }
  }

  @Test
  void interruptingTheCallingThreadStopsTheGeneration() throws Exception {
    String tiny = TestSupport.models().resolve("tiny-llama-q8_0.gguf").toString();
    try (Model m = new ModelBuilder(tiny).device(Device.CPU).threads(1).contextSize(256).build()) {
      Generation[] out = new Generation[1];
      Thread t = new Thread(() -> {
        AtomicInteger calls = new AtomicInteger();
        out[0] = m.generate("Hello", GenerationConfig.builder().maxTokens(200).temperature(0)
            .ignoreEos(true).build(), (text, token) -> {
              if (calls.incrementAndGet() == 3) {
                Thread.currentThread().interrupt();
              }
              return true;
            });
      });
      t.start();
      t.join(60_000);
      assertEquals(StopReason.CANCELLED, out[0].stopReason());
      assertTrue(out[0].tokens().length <= 4, "tokens: " + out[0].tokens().length);
    }
  }

  @Test
  void listenerExceptionPropagatesAndTheModelStaysUsable() throws Exception {
    try (Model m = TestSupport.gemmaModel()) {
      Generation before = m.generate("The capital of France is", TestSupport.greedy(8), null);
      IllegalStateException boom = new IllegalStateException("listener failed");
      AtomicInteger calls = new AtomicInteger();
      IllegalStateException thrown = assertThrows(IllegalStateException.class,
          () -> m.generate("Once upon a time", LONG, (text, token) -> {
            if (calls.incrementAndGet() == 3) {
              throw boom;
            }
            return true;
          }));
      assertSame(boom, thrown);
      assertEquals(3, calls.get(), "the listener was called after it threw");
      TestSupport.awaitIdle(m);
      // Through generateAsync the future completes exceptionally with it.
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> m.generateAsync("Hi", LONG, (text, token) -> {
            throw boom;
          }).result().get(60, TimeUnit.SECONDS));
      assertSame(boom, e.getCause());
      Generation after = m.generate("The capital of France is", TestSupport.greedy(8), null);
      assertArrayEquals(before.tokens(), after.tokens());
    }
  }

  @Test
  void closeDuringAGenerationCancelsItAndLaterCallsThrow() throws Exception {
    Model m = TestSupport.gemmaModel();
    CountDownLatch started = new CountDownLatch(1);
    GenerationTask task = m.generateAsync("Once upon a time", LONG, (text, token) -> {
      started.countDown();
      return true;
    });
    assertTrue(started.await(120, TimeUnit.SECONDS));
    long t0 = System.nanoTime();
    m.close();
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(30), "close() waited too long");
    // close() returned after the generation: it ended, cancelled.
    assertTrue(task.result().isDone());
    assertEquals(StopReason.CANCELLED, task.result().get().stopReason());
    assertTrue(m.isClosed());
    assertThrows(IllegalStateException.class, () -> m.generate("Hi"));
    assertThrows(IllegalStateException.class, () -> m.tokenize("Hi", true, false));
    assertThrows(IllegalStateException.class, m::engineStats);
    m.close();  // idempotent
  }

  @Test
  void fourThreadsAtOnceEachEqualTheirSoloRuns() throws Exception {
    String[] prompts = {"The capital of France is", "def fibonacci(n):", "Water boils at",
        "My favourite colour is"};
    try (Model m = new ModelBuilder(TestSupport.gemma()).device(Device.CPU).threads(2)
        .contextSize(512).maxSequences(4).deterministic(true).build()) {
      List<Generation> solo = new ArrayList<>();
      for (String p : prompts) {
        solo.add(m.generate(p, TestSupport.greedy(16), null));
      }
      CyclicBarrier start = new CyclicBarrier(prompts.length);
      List<CompletableFuture<Generation>> runs = new ArrayList<>();
      long stepsBefore = m.engineStats().steps();
      for (String p : prompts) {
        runs.add(CompletableFuture.supplyAsync(() -> {
          try {
            start.await();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
          return m.generate(p, TestSupport.greedy(16), null);
        }));
      }
      int soloSteps = 0;
      for (int i = 0; i < prompts.length; i++) {
        Generation g = runs.get(i).get(120, TimeUnit.SECONDS);
        assertArrayEquals(solo.get(i).tokens(), g.tokens(), prompts[i]);
        assertEquals(solo.get(i).text(), g.text());
        soloSteps += solo.get(i).tokens().length + 1;
      }
      // Batched: the four generations shared forward passes.
      assertTrue(m.engineStats().steps() - stepsBefore < soloSteps);
    }
  }
}
