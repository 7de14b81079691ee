// The served-models registry: loads on first use (once, whoever asks at the same time), unloads
// the least recently used idle model over its limits (never the pinned default, never one a
// request holds), lets other models answer while one loads, retries a failed load.
#include "server/model_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

namespace geniex::server {
namespace {

std::string tiny(const std::string& name) {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");  // set by ctest
  return std::string(root ? root : ".") + "/tests/data/models/" + name;
}

Result<Model> build(const std::string& path) {
  return ModelBuilder(path).with_context_size(64).with_threads(1).build();
}

std::vector<ModelRegistry::Entry> three() {
  return {{"llama", tiny("tiny-llama-f32.gguf")},
          {"qwen3", tiny("tiny-qwen3-f32.gguf")},
          {"mistral", tiny("tiny-mistral-f32.gguf")}};
}

bool loaded(const ModelRegistry& r, const std::string& id) {
  for (const auto& s : r.states()) {
    if (s.id == id) return s.loaded;
  }
  return false;
}

TEST(ModelRegistry, LoadsOnFirstUseAndOnceForConcurrentRequests) {
  std::atomic<int> calls{0};
  ModelRegistry r(three(),
                  [&](const std::string& p) {
                    ++calls;
                    return build(p);
                  },
                  {});
  EXPECT_FALSE(loaded(r, "qwen3"));
  std::vector<std::future<Result<std::shared_ptr<LoadedModel>>>> got;
  for (int i = 0; i < 4; ++i)
    got.push_back(std::async(std::launch::async, [&] { return r.acquire("qwen3"); }));
  std::shared_ptr<LoadedModel> first;
  for (auto& f : got) {
    auto m = f.get();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    if (!first) first = *m;
    EXPECT_EQ(m->get(), first.get());
  }
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(r.loads(), 1);
  EXPECT_TRUE(loaded(r, "qwen3"));
  EXPECT_EQ(first->model.info().architecture, "qwen3");
  auto unknown = r.acquire("gpt-9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
}

TEST(ModelRegistry, UnloadsTheLeastRecentlyUsedIdleModelButNeverThePinnedOrABusyOne) {
  ModelRegistry::Limits limits;
  limits.max_loaded = 2;
  ModelRegistry r(three(), build, limits);
  auto pinned = build(tiny("tiny-llama-f32.gguf"));
  ASSERT_TRUE(pinned.ok());
  r.pin("llama", std::make_shared<LoadedModel>(std::move(*pinned)));
  {
    auto q = r.acquire("qwen3");
    ASSERT_TRUE(q.ok());
  }                               // idle again
  auto m = r.acquire("mistral");  // over the limit: qwen3 (idle) goes, llama (pinned) stays
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(loaded(r, "llama"));
  EXPECT_FALSE(loaded(r, "qwen3"));
  EXPECT_TRUE(loaded(r, "mistral"));
  // mistral is busy (the lease `m` is held): loading qwen3 again cannot unload it, and the
  // pinned one stays too: three are loaded for a while.
  auto q2 = r.acquire("qwen3");
  ASSERT_TRUE(q2.ok());
  EXPECT_TRUE(loaded(r, "mistral"));
  EXPECT_TRUE(loaded(r, "llama"));
  // An unloaded model lives on while a request holds it, and is freed when that one ends.
  std::weak_ptr<LoadedModel> gone;
  {
    ModelRegistry one(three(), build, limits);
    auto a = one.acquire("llama");
    auto b = one.acquire("qwen3");
    ASSERT_TRUE(a.ok() && b.ok());
    gone = *a;
    auto c = one.acquire("mistral");  // llama and qwen3 are busy: nothing can go
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(loaded(one, "llama"));
    a = Result<std::shared_ptr<LoadedModel>>(std::shared_ptr<LoadedModel>());
    EXPECT_FALSE(gone.expired());  // the registry still holds it (no load since)
  }
  EXPECT_TRUE(gone.expired());
}

TEST(ModelRegistry, OtherModelsAnswerWhileOneLoads) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  ModelRegistry r(three(),
                  [&](const std::string& p) {
                    if (p.find("mistral") != std::string::npos) gate.wait();
                    return build(p);
                  },
                  {});
  ASSERT_TRUE(r.acquire("llama").ok());
  auto slow = std::async(std::launch::async, [&] { return r.acquire("mistral"); });
  // The slow load is in progress; a request for a loaded model and a load of another go on.
  for (int i = 0; i < 100 && r.states()[2].loading == false; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(r.states()[2].loading);
  EXPECT_TRUE(r.acquire("llama").ok());
  EXPECT_TRUE(r.acquire("qwen3").ok());
  EXPECT_EQ(slow.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  release.set_value();
  EXPECT_TRUE(slow.get().ok());
}

TEST(ModelRegistry, AFailedLoadIsReportedAndTriedAgain) {
  int calls = 0;
  ModelRegistry r({{"bad", tiny("no-such-file.gguf")}},
                  [&](const std::string& p) {
                    ++calls;
                    return build(p);
                  },
                  {});
  EXPECT_FALSE(r.acquire("bad").ok());
  EXPECT_FALSE(r.acquire("bad").ok());
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(loaded(r, "bad"));
}

TEST(ModelRegistry, AMemoryBudgetUnloadsIdleModels) {
  ModelRegistry::Limits limits;
  limits.max_bytes = 1;  // smaller than any model: only the one in use stays
  ModelRegistry r(three(), build, limits);
  ASSERT_TRUE(r.acquire("llama").ok());
  ASSERT_TRUE(r.acquire("qwen3").ok());
  EXPECT_FALSE(loaded(r, "llama"));
  EXPECT_TRUE(loaded(r, "qwen3"));
}

}  // namespace
}  // namespace geniex::server
