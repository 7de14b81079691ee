package dev.geniex;

/** Element type of the KV cache (C++ {@code geniex::KvCacheType}). */
public enum KvCacheType {
  F16,
  F32,
  Q8_0,
  Q4_0
}
