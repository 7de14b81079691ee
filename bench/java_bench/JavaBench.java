// Decode tok/s through the Java SDK (JNI) against `geniex bench` (tg) on the same model, threads
// and token count; run by bench/java_bench.sh. Java's decode speed is (n - 1) / (time(n new
// tokens) - time(1 new token)) from the same prompt, so prefill and the first token cancel out;
// every token crosses JNI (a byte[] per piece, the listener upcall, UTF-8 decoding in Java).
// The two run alternately, -r times each (`geniex bench -r 1` per round, its own process);
// medians. The JNI cost per token is also measured alone, without a model: Diagnostics'
// upcalls exactly as generate makes them (median of 5 runs of 200,000 after a warm-up).
import dev.geniex.Device;
import dev.geniex.Diagnostics;
import dev.geniex.Generation;
import dev.geniex.GenerationConfig;
import dev.geniex.Model;
import dev.geniex.ModelBuilder;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class JavaBench {
  static final String PROMPT = "1, 2, 3, 4, 5,";  // Gemma 3 270M counts on without an early EOG

  static double median(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    Collections.sort(s);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  static double benchCli(String cli, String model, int threads, int n) throws Exception {
    Process p = new ProcessBuilder(cli, "bench", "-m", model, "-t", Integer.toString(threads),
        "-p", "0", "-n", Integer.toString(n), "-r", "1", "--json")
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (InputStream in = p.getInputStream()) {
      in.transferTo(out);
    }
    if (p.waitFor() != 0) {
      throw new IllegalStateException("geniex bench failed");
    }
    String json = out.toString(StandardCharsets.UTF_8);
    Matcher m = Pattern.compile("\"tg\":\\{[^}]*\"median_tok_s\":([0-9.eE+-]+)").matcher(json);
    if (!m.find()) {
      throw new IllegalStateException("no tg.median_tok_s in " + json);
    }
    return Double.parseDouble(m.group(1));
  }

  static int run(Model model, int n, int[] pieces) {
    model.reset();  // no prefix reuse: each call prefills like the first
    GenerationConfig cfg =
        GenerationConfig.builder().maxTokens(n).temperature(0).ignoreEos(true).build();
    Generation g = model.generate(PROMPT, cfg, (text, token) -> {
      pieces[0] += text.length() >= 0 ? 1 : 0;
      return true;
    });
    return g.tokens().length;
  }

  static double decodeTps(Model model, int n) {
    int[] pieces = {0};
    long t0 = System.nanoTime();
    int got1 = run(model, 1, pieces);
    long t1 = System.nanoTime();
    int got = run(model, n, pieces);
    long t2 = System.nanoTime();
    if (got != n || got1 != 1) {
      throw new IllegalStateException("generated " + got + " tokens, wanted " + n);
    }
    return (n - 1) / (((t2 - t1) - (t1 - t0)) / 1e9);
  }

  public static void main(String[] args) throws Exception {
    String cli = args[0];
    String modelPath = args[1];
    int threads = Integer.parseInt(args[2]);
    int n = Integer.parseInt(args[3]);
    int reps = Integer.parseInt(args[4]);
    try (Model model =
             new ModelBuilder(modelPath).device(Device.CPU).threads(threads).build()) {
      for (int i = 0; i < 3; i++) {
        decodeTps(model, n);  // warm-up: the JIT compiles the listener path, page cache
      }
      List<Double> bench = new ArrayList<>();
      List<Double> java = new ArrayList<>();
      for (int i = 0; i < reps; i++) {
        bench.add(benchCli(cli, modelPath, threads, n));
        java.add(decodeTps(model, n));
      }
      double b = median(bench);
      double j = median(java);
      int[] sink = {0};
      List<Double> upcall = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        double ns = Diagnostics.nanosPerPiece((text, token) -> ++sink[0] > 0, 200_000);
        if (i > 0) {
          upcall.add(ns);  // the first run warms the JIT up
        }
      }
      System.out.printf(
          "{\"model\": \"%s\", \"threads\": %d, \"n_gen\": %d, \"reps\": %d, "
              + "\"geniex_bench_tg\": %.2f, \"java\": %.2f, \"java_vs_bench\": %.3f, "
              + "\"wall_delta_us_per_token\": %.1f, \"jni_upcall_us_per_token\": %.3f, "
              + "\"bench_runs\": %s, \"java_runs\": %s}%n",
          new java.io.File(modelPath).getName(), threads, n, reps, b, j, j / b,
          1e6 / j - 1e6 / b, median(upcall) / 1e3, bench, java);
    }
  }
}
