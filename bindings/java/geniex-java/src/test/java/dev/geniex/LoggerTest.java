package dev.geniex;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Engine log lines reach ModelBuilder.logger on the calling thread. */
class LoggerTest {
  @Test
  void placementLinesArriveOnTheCallingThread() {
    List<String> lines = Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = Collections.synchronizedList(new ArrayList<>());
    String tiny = TestSupport.models().resolve("tiny-llama-q8_0.gguf").toString();
    try (Model m = new ModelBuilder(tiny).device(Device.CPU).threads(1).contextSize(64)
        .logger(line -> {
          lines.add(line);
          threads.add(Thread.currentThread());
        }).build()) {
      m.generate("Hello", TestSupport.greedy(2), null);
    }
    assertTrue(lines.stream().anyMatch(l -> l.startsWith("placement:") && l.contains("cpu")),
        lines.toString());
    assertTrue(threads.stream().allMatch(t -> t == Thread.currentThread()));
  }
}
