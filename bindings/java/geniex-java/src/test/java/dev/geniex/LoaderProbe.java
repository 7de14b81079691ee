package dev.geniex;

/** Run in a child JVM by NativeLoaderTest: loads a model and says where the library came from. */
public final class LoaderProbe {
  private LoaderProbe() {}

  public static void main(String[] args) {
    try (Model m = new ModelBuilder(args[0]).device(Device.CPU).threads(1).contextSize(64)
        .build()) {
      Generation g = m.generate("Hello", GenerationConfig.builder().maxTokens(3).temperature(0)
          .build(), null);
      System.out.println("loaded=" + NativeLoader.loadedFrom);
      System.out.println("tokens=" + g.tokens().length);
    }
  }
}
