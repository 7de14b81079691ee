#include "server/model_registry.h"

#include <algorithm>

namespace geniex::server {

int64_t model_bytes(const Model& m) { return m.info().file_bytes + m.kv_stats().bytes_resident; }

ModelRegistry::ModelRegistry(std::vector<Entry> entries, Loader loader, Limits limits)
    : loader_(std::move(loader)), limits_(limits) {
  slots_.reserve(entries.size());
  for (Entry& e : entries) {
    Slot s;
    s.entry = std::move(e);
    slots_.push_back(std::move(s));
  }
}

ModelRegistry::Slot* ModelRegistry::find(const std::string& id) {
  for (Slot& s : slots_) {
    if (s.entry.id == id) return &s;
  }
  return nullptr;
}

const ModelRegistry::Slot* ModelRegistry::find(const std::string& id) const {
  for (const Slot& s : slots_) {
    if (s.entry.id == id) return &s;
  }
  return nullptr;
}

bool ModelRegistry::serves(const std::string& id) const { return find(id) != nullptr; }

void ModelRegistry::pin(const std::string& id, std::shared_ptr<LoadedModel> model) {
  std::lock_guard<std::mutex> l(mu_);
  Slot* s = find(id);
  if (s == nullptr) return;
  s->bytes = model_bytes(model->model);
  s->model = std::move(model);
  s->pinned = true;
  s->last_used = std::chrono::steady_clock::now();
}

void ModelRegistry::make_room(const Slot* keep) {
  for (;;) {
    int loaded = 0;
    int64_t bytes = 0;
    Slot* victim = nullptr;
    for (Slot& s : slots_) {
      if (!s.model && !s.loading) continue;
      ++loaded;
      if (s.model) bytes += s.bytes = model_bytes(s.model->model);
      // Idle: only the registry holds it. Never the pinned one or the one being asked for.
      const bool idle = s.model && s.model.use_count() == 1 && !s.pinned && &s != keep;
      if (idle && (victim == nullptr || s.last_used < victim->last_used)) victim = &s;
    }
    const bool over_count = limits_.max_loaded > 0 && loaded > limits_.max_loaded;
    const bool over_bytes = limits_.max_bytes > 0 && bytes > limits_.max_bytes;
    if ((!over_count && !over_bytes) || victim == nullptr) return;
    victim->model.reset();  // freed here (nobody else holds it)
    victim->bytes = 0;
  }
}

Result<std::shared_ptr<LoadedModel>> ModelRegistry::acquire(const std::string& id) {
  std::unique_lock<std::mutex> l(mu_);
  Slot* s = find(id);
  if (s == nullptr) return not_found("model '" + id + "' is not served here");
  cv_.wait(l, [&] { return !s->loading; });
  if (s->model) {
    s->last_used = std::chrono::steady_clock::now();
    return s->model;
  }
  s->loading = true;
  make_room(s);  // counts this one as loaded already
  const std::string path = s->entry.path;
  l.unlock();
  // Loads outside the lock: requests for the other models go on meanwhile.
  Result<Model> built = loader_(path);
  std::shared_ptr<LoadedModel> loaded;
  if (built.ok()) loaded = std::make_shared<LoadedModel>(std::move(*built));
  l.lock();
  s->loading = false;
  cv_.notify_all();
  if (!built.ok()) return built.status();
  s->model = loaded;
  s->bytes = model_bytes(loaded->model);
  s->last_used = std::chrono::steady_clock::now();
  ++loads_;
  make_room(s);  // the budget counts its real size now
  return loaded;
}

std::vector<ModelRegistry::State> ModelRegistry::states() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<State> out;
  for (const Slot& s : slots_) {
    out.push_back({s.entry.id, s.entry.path, s.model != nullptr, s.loading, s.model ? s.bytes : 0});
  }
  return out;
}

int64_t ModelRegistry::loads() const {
  std::lock_guard<std::mutex> l(mu_);
  return loads_;
}

}  // namespace geniex::server
