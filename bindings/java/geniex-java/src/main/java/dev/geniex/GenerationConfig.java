package dev.geniex;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Sampling and stopping for one generation (C++ {@code geniex::GenerationConfig}; the defaults
 * are the engine's, llama.cpp's). Immutable: {@code GenerationConfig.builder().maxTokens(64)
 * .temperature(0).build()}. The engine checks the values: a bad one is a {@link
 * GenieXException} with {@link StatusCode#INVALID_ARGUMENT} from generate/chat.
 */
public final class GenerationConfig {
  private static final GenerationConfig DEFAULTS = builder().build();

  private final int maxTokens;
  private final float temperature;
  private final int topK;
  private final float topP;
  private final float minP;
  private final float repetitionPenalty;
  private final float presencePenalty;
  private final float frequencyPenalty;
  private final int penaltyLastN;
  private final Long seed;
  private final List<String> stop;
  private final boolean ignoreEos;
  private final boolean parseSpecial;
  private final boolean addSpecial;
  private final String jsonSchema;

  private GenerationConfig(Builder b) {
    maxTokens = b.maxTokens;
    temperature = b.temperature;
    topK = b.topK;
    topP = b.topP;
    minP = b.minP;
    repetitionPenalty = b.repetitionPenalty;
    presencePenalty = b.presencePenalty;
    frequencyPenalty = b.frequencyPenalty;
    penaltyLastN = b.penaltyLastN;
    seed = b.seed;
    stop = Collections.unmodifiableList(new ArrayList<>(b.stop));
    ignoreEos = b.ignoreEos;
    parseSpecial = b.parseSpecial;
    addSpecial = b.addSpecial;
    jsonSchema = b.jsonSchema;
  }

  /** The engine's defaults. */
  public static GenerationConfig defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from this config's values. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.maxTokens = maxTokens;
    b.temperature = temperature;
    b.topK = topK;
    b.topP = topP;
    b.minP = minP;
    b.repetitionPenalty = repetitionPenalty;
    b.presencePenalty = presencePenalty;
    b.frequencyPenalty = frequencyPenalty;
    b.penaltyLastN = penaltyLastN;
    b.seed = seed;
    b.stop = new ArrayList<>(stop);
    b.ignoreEos = ignoreEos;
    b.parseSpecial = parseSpecial;
    b.addSpecial = addSpecial;
    b.jsonSchema = jsonSchema;
    return b;
  }

  public int maxTokens() {
    return maxTokens;
  }

  public float temperature() {
    return temperature;
  }

  public int topK() {
    return topK;
  }

  public float topP() {
    return topP;
  }

  public float minP() {
    return minP;
  }

  public float repetitionPenalty() {
    return repetitionPenalty;
  }

  public float presencePenalty() {
    return presencePenalty;
  }

  public float frequencyPenalty() {
    return frequencyPenalty;
  }

  public int penaltyLastN() {
    return penaltyLastN;
  }

  /** The sampler's seed; null = a fresh random seed per call. */
  public Long seed() {
    return seed;
  }

  public List<String> stop() {
    return stop;
  }

  public boolean ignoreEos() {
    return ignoreEos;
  }

  public boolean parseSpecial() {
    return parseSpecial;
  }

  public boolean addSpecial() {
    return addSpecial;
  }

  /** A JSON Schema the output must satisfy ("" = free text). */
  public String jsonSchema() {
    return jsonSchema;
  }

  // Packed for the JNI library (jni_generate.cpp: CfgInt / CfgFloat).
  int[] packedInts() {
    return new int[] {
      maxTokens, topK, penaltyLastN, ignoreEos ? 1 : 0, parseSpecial ? 1 : 0, addSpecial ? 1 : 0,
      seed != null ? 1 : 0
    };
  }

  float[] packedFloats() {
    return new float[] {
      temperature, topP, minP, repetitionPenalty, presencePenalty, frequencyPenalty
    };
  }

  long packedSeed() {
    return seed != null ? seed : 0L;
  }

  byte[][] packedStops() {
    byte[][] out = new byte[stop.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = Utf8.bytes(stop.get(i));
    }
    return out;
  }

  /** Builds a {@link GenerationConfig}; every field starts at the engine's default. */
  public static final class Builder {
    private int maxTokens = 256;
    private float temperature = 0.8f;
    private int topK = 40;
    private float topP = 0.95f;
    private float minP = 0.05f;
    private float repetitionPenalty = 1.0f;
    private float presencePenalty = 0.0f;
    private float frequencyPenalty = 0.0f;
    private int penaltyLastN = 64;
    private Long seed = null;
    private List<String> stop = new ArrayList<>();
    private boolean ignoreEos = false;
    private boolean parseSpecial = false;
    private boolean addSpecial = true;
    private String jsonSchema = "";

    private Builder() {}

    /** Upper bound of generated tokens (default 256). */
    public Builder maxTokens(int v) {
      maxTokens = v;
      return this;
    }

    /** 0 = greedy (default 0.8). */
    public Builder temperature(float v) {
      temperature = v;
      return this;
    }

    public Builder topK(int v) {
      topK = v;
      return this;
    }

    public Builder topP(float v) {
      topP = v;
      return this;
    }

    public Builder minP(float v) {
      minP = v;
      return this;
    }

    public Builder repetitionPenalty(float v) {
      repetitionPenalty = v;
      return this;
    }

    public Builder presencePenalty(float v) {
      presencePenalty = v;
      return this;
    }

    public Builder frequencyPenalty(float v) {
      frequencyPenalty = v;
      return this;
    }

    public Builder penaltyLastN(int v) {
      penaltyLastN = v;
      return this;
    }

    /** The sampler's seed; null = random per call. */
    public Builder seed(Long v) {
      seed = v;
      return this;
    }

    /** Generation stops before the first occurrence of any of these. */
    public Builder stop(List<String> v) {
      stop = new ArrayList<>(Objects.requireNonNull(v, "stop"));
      return this;
    }

    public Builder ignoreEos(boolean v) {
      ignoreEos = v;
      return this;
    }

    /** Raw prompts only: special-token text ("&lt;start_of_turn&gt;") becomes the tokens. */
    public Builder parseSpecial(boolean v) {
      parseSpecial = v;
      return this;
    }

    /** Raw prompts only: add BOS (default true). */
    public Builder addSpecial(boolean v) {
      addSpecial = v;
      return this;
    }

    /** Structured output: a JSON Schema the reply must satisfy. */
    public Builder jsonSchema(String v) {
      jsonSchema = Objects.requireNonNull(v, "jsonSchema");
      return this;
    }

    public GenerationConfig build() {
      return new GenerationConfig(this);
    }
  }
}
