package dev.geniex;

/** Where a model runs: the runtime falls back NPU -> GPU -> CPU when a unit cannot run a stage. */
public enum Device {
  AUTO,
  CPU,
  GPU,
  NPU
}
