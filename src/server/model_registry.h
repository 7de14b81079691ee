// The models one `geniex serve` offers (repeated -m, or every GGUF of --model-dir): each is
// loaded on its first request and unloaded when it has been idle longest and the server is over
// its count (--max-loaded) or memory budget (--models-memory). A model that is loading holds up
// only the requests for it; the others go on. Requests hold a lease: a model the registry unloads
// is freed once the requests that use it are done.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"
#include "server/token_texts.h"

namespace geniex::server {

/// A loaded model and its token texts (the server's per-model tables).
struct LoadedModel {
  explicit LoadedModel(Model m) : model(std::move(m)), texts(model) {}
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;
  Model model;
  TokenTexts texts;
};

class ModelRegistry {
 public:
  struct Entry {
    std::string id;    ///< what clients send as "model" (the file's stem)
    std::string path;  ///< the GGUF
  };
  /// Builds a model from its path (geniex serve's flags: context, threads, device, KV, ...).
  using Loader = std::function<Result<Model>(const std::string& path)>;
  struct Limits {
    int max_loaded = 0;     ///< models loaded at once (0: no limit)
    int64_t max_bytes = 0;  ///< weights + KV of the loaded models (0: no limit)
  };
  struct State {
    std::string id;
    std::string path;
    bool loaded = false;
    bool loading = false;
    int64_t bytes = 0;  ///< estimated resident bytes when loaded
  };

  /// `entries` in the order /v1/models lists them; ids must be distinct.
  ModelRegistry(std::vector<Entry> entries, Loader loader, Limits limits);

  /// Puts an already loaded model in (the default model, loaded at start); it is never
  /// unloaded.
  void pin(const std::string& id, std::shared_ptr<LoadedModel> model);

  /// The model named `id`, loading it first if needed (a load in progress is waited for).
  /// kNotFound for an id that is not served; the loader's error when it fails (the next
  /// request tries again).
  Result<std::shared_ptr<LoadedModel>> acquire(const std::string& id);

  [[nodiscard]] bool serves(const std::string& id) const;
  [[nodiscard]] std::vector<State> states() const;
  [[nodiscard]] size_t size() const { return slots_.size(); }
  /// Models loaded so far (loads that succeeded), for tests and metrics.
  [[nodiscard]] int64_t loads() const;

 private:
  struct Slot {
    Entry entry;
    std::shared_ptr<LoadedModel> model;  ///< null: not loaded
    bool loading = false;
    bool pinned = false;
    int64_t bytes = 0;
    std::chrono::steady_clock::time_point last_used{};
  };
  Slot* find(const std::string& id);
  const Slot* find(const std::string& id) const;
  /// Unloads idle models, least recently used first, until one more fits the limits.
  void make_room(const Slot* keep);

  Loader loader_;
  Limits limits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  int64_t loads_ = 0;
};

/// The resident bytes of a loaded model as the budget counts them: its file (mapped weights)
/// plus its KV cache.
int64_t model_bytes(const Model& m);

}  // namespace geniex::server
