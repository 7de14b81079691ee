// RoPE on the CPU: the reference formula (angles, sin and cos in double; see graph/ref_ops.cpp),
// bit-identical to it, with the base^(-2i/n) powers computed once per call instead of once per
// token, the cos / sin table once per run and parameter set (Scratch::rope: the q and k RoPEs of
// every layer share it), and tokens spread over the pool.
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"

namespace geniex::backends::cpu {

namespace {

constexpr size_t kRopeTables = 4;

// The table of `src`'s positions for these parameters: found, or computed into the least
// recently used slot.
const RopeTable& table_for(ThreadPool& pool, Scratch& scratch, std::span<const int32_t> pos,
                           int64_t n_dims, const graph::RopeParams& p,
                           std::span<const float> freq_factors, ActSource src, ActSource ff_src) {
  const auto n_tokens = static_cast<int64_t>(pos.size());
  const float* ff = freq_factors.empty() ? nullptr : freq_factors.data();
  if (ff == nullptr) ff_src = {};
  // Nodes name the contents within a run; without a name for each input nothing is reused.
  const bool named = src.run != 0 && (ff == nullptr || ff_src.run != 0);
  auto& tables = scratch.rope;
  for (RopeTable& t : tables) {
    if (named && t.pos == src && t.freq_factors == ff_src && t.n_tokens == n_tokens &&
        t.n_dims == n_dims && t.base == p.base && t.freq_scale == p.freq_scale) {
      t.last_use = ++scratch.rope_clock;
      return t;
    }
  }
  if (tables.size() < kRopeTables) tables.emplace_back();
  RopeTable* slot = &tables.front();
  for (RopeTable& t : tables) {
    if (t.last_use < slot->last_use) slot = &t;
  }
  RopeTable& t = *slot;
  t.pos = named ? src : ActSource{};
  t.freq_factors = named ? ff_src : ActSource{};
  t.n_tokens = n_tokens;
  t.n_dims = n_dims;
  t.base = p.base;
  t.freq_scale = p.freq_scale;
  t.last_use = ++scratch.rope_clock;
  const int64_t half = n_dims / 2;
  std::vector<double> powers(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    powers[static_cast<size_t>(i)] = std::pow(
        static_cast<double>(p.base), -2.0 * static_cast<double>(i) / static_cast<double>(n_dims));
  }
  t.cs.resize(static_cast<size_t>(n_tokens * half));
  t.sn.resize(t.cs.size());
  pool.parallel_for(n_tokens, [&](int64_t k, int) {
    double* cs = t.cs.data() + k * half;
    double* sn = t.sn.data() + k * half;
    for (int64_t i = 0; i < half; ++i) {
      double theta = static_cast<double>(pos[static_cast<size_t>(k)]) * p.freq_scale *
                     powers[static_cast<size_t>(i)];
      if (ff != nullptr) theta /= static_cast<double>(ff[i]);
      cs[i] = std::cos(theta);
      sn[i] = std::sin(theta);
    }
  });
  return t;
}

}  // namespace

Status rope(ThreadPool& pool, Scratch& scratch, const float* x, int64_t head_dim, int64_t n_head,
            int64_t n_tokens, std::span<const int32_t> pos, const graph::RopeParams& p,
            std::span<const float> freq_factors, float* y, ActSource pos_src, ActSource ff_src) {
  const int64_t n_dims = p.n_dims == 0 ? head_dim : p.n_dims;
  if (static_cast<int64_t>(pos.size()) != n_tokens || n_dims <= 0 || n_dims % 2 != 0 ||
      n_dims > head_dim) {
    return invalid_argument("rope: pos has " + std::to_string(pos.size()) + " entries for " +
                            std::to_string(n_tokens) + " tokens, n_dims " + std::to_string(n_dims) +
                            ", head_dim " + std::to_string(head_dim));
  }
  const int64_t half = n_dims / 2;
  if (!freq_factors.empty() && static_cast<int64_t>(freq_factors.size()) != half) {
    return invalid_argument("rope: freq_factors must have n_dims/2 entries");
  }
  const RopeTable& tab = table_for(pool, scratch, pos, n_dims, p, freq_factors, pos_src, ff_src);
  const bool neox = p.mode == graph::RopeMode::kNeox;
  pool.parallel_for(n_tokens, [&](int64_t t, int) {
    const double* cs = tab.cs.data() + t * half;
    const double* sn = tab.sn.data() + t * half;
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t base = (t * n_head + h) * head_dim;
      const float* xr = x + base;
      float* yr = y + base;
      for (int64_t i = n_dims; i < head_dim; ++i) yr[i] = xr[i];
      for (int64_t i = 0; i < half; ++i) {
        const int64_t i0 = neox ? i : 2 * i;
        const int64_t i1 = neox ? i + half : 2 * i + 1;
        const double a = xr[i0], b = xr[i1];
        yr[i0] = static_cast<float>(a * cs[i] - b * sn[i]);
        yr[i1] = static_cast<float>(a * sn[i] + b * cs[i]);
      }
    }
  });
  return {};
}

}  // namespace geniex::backends::cpu
