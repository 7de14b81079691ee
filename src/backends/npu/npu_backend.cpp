#include "backends/npu/npu_backend.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <unordered_map>

#include "backends/npu/translate.h"

namespace geniex::backends {
namespace {

using graph::Node;
using graph::NodeId;
using graph::NodeRole;

constexpr size_t kMsgSize = 1024;

std::string who(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return "node " + std::to_string(id) + (n.name.empty() ? std::string() : " '" + n.name + "'");
}

// The Status for a plugin error code (OUT_OF_MEMORY -> kResourceExhausted, UNSUPPORTED ->
// kUnimplemented), naming the plugin and what it was doing.
Status from_plugin(geniex_npu_status code, const std::string& plugin, const std::string& what,
                   const char* msg) {
  std::string text = "npu plugin '" + plugin + "' " + what + ": " + msg;
  switch (code) {
    case GENIEX_NPU_OK: return {};
    case GENIEX_NPU_UNSUPPORTED: return unimplemented(std::move(text));
    case GENIEX_NPU_OUT_OF_MEMORY: return resource_exhausted(std::move(text));
    case GENIEX_NPU_INVALID_ARGUMENT: return invalid_argument(std::move(text));
    case GENIEX_NPU_OUT_OF_RANGE: return out_of_range(std::move(text));
    case GENIEX_NPU_INTERNAL: return internal_error(std::move(text));
  }
  return internal_error(text + " (unknown status code " + std::to_string(code) + ")");
}

class NpuBackend final : public Backend {
 public:
  NpuBackend(std::unique_ptr<npu::LoadedNpuPlugin> plugin, size_t max_cached)
      : plugin_(std::move(plugin)), max_cached_(std::max<size_t>(max_cached, 1)) {}
  ~NpuBackend() override {
    for (auto& [key, entry] : cache_) release(entry);
  }
  NpuBackend(const NpuBackend&) = delete;
  NpuBackend& operator=(const NpuBackend&) = delete;

  [[nodiscard]] std::string name() const override {
    return "npu(" + plugin_->name() + ": " + plugin_->caps().device_name + ")";
  }
  [[nodiscard]] DeviceKind kind() const override { return DeviceKind::kNpu; }
  [[nodiscard]] std::vector<int32_t> static_batch_tokens() const override {
    std::vector<int32_t> v = plugin_->caps().batch_tokens;
    std::sort(v.begin(), v.end());
    return v;
  }
  [[nodiscard]] OpSupport supports(const graph::Graph& g, NodeId id) const override;
  Status run(const graph::Graph& g, const graph::Bindings& b) override;

 private:
  struct Entry {
    geniex_npu_compiled* handle = nullptr;
    std::vector<const void*> weight_ptrs;  // recompile when the weights move
    std::vector<NodeId> outputs;           // recompile when other outputs are wanted
    uint64_t last_use = 0;
  };
  void release(Entry& e) {
    if (e.handle != nullptr) plugin_->api().release(plugin_->device(), e.handle);
    e.handle = nullptr;
  }
  Result<geniex_npu_compiled*> compiled(const graph::Graph& g, const graph::BindingsAccess& b,
                                        const std::vector<NodeId>& outputs);
  Result<std::vector<geniex_npu_buffer>> buffers(const graph::Graph& g,
                                                 const graph::BindingsAccess& b) const;

  std::unique_ptr<npu::LoadedNpuPlugin> plugin_;
  size_t max_cached_;
  std::unordered_map<uint64_t, Entry> cache_;
  uint64_t clock_ = 0;
};

OpSupport NpuBackend::supports(const graph::Graph& g, NodeId id) const {
  const Node& n = g.node(id);
  if (n.role != NodeRole::kOp) return {Support::kNative, {}};
  const npu::NpuCaps& caps = plugin_->caps();
  const auto& allowed = caps.batch_tokens;
  if (std::find(allowed.begin(), allowed.end(), g.batch_tokens()) == allowed.end()) {
    return {Support::kUnsupported,
            "static shapes: the graph's batch of " + std::to_string(g.batch_tokens()) +
                " tokens is not one of the allowed counts " + caps.batch_tokens_text()};
  }
  const uint32_t kind = npu::to_npu_kind(n.op);
  if (kind >= GENIEX_NPU_OP_COUNT || caps.op_dtype_masks[kind] == 0) {
    return {Support::kUnsupported, "op " + std::string(graph::op_name(n.op)) +
                                       " is not supported by npu plugin '" + plugin_->name() + "'"};
  }
  const uint32_t dtype = npu::typed_input_dtype(g, id);
  if (!caps.accepts(kind, dtype)) {
    return {Support::kUnsupported, "op " + std::string(graph::op_name(n.op)) + " does not accept " +
                                       std::string(ggml_type_name(static_cast<GgmlType>(dtype))) +
                                       " on npu plugin '" + plugin_->name() + "'"};
  }
  return {Support::kNative, {}};
}

Result<geniex_npu_compiled*> NpuBackend::compiled(const graph::Graph& g,
                                                  const graph::BindingsAccess& b,
                                                  const std::vector<NodeId>& outputs) {
  GENIEX_ASSIGN_OR_RETURN(npu::NpuGraphDesc desc, npu::translate_graph(g, b, outputs));
  desc.seal();
  const uint64_t key = g.structure_key();
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    if (it->second.weight_ptrs == desc.weight_ptrs && it->second.outputs == outputs) {
      it->second.last_use = ++clock_;
      return it->second.handle;
    }
    release(it->second);
    cache_.erase(it);
  }
  while (cache_.size() >= max_cached_) {  // drop the least recently used graph
    auto lru = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& c) {
      return a.second.last_use < c.second.last_use;
    });
    release(lru->second);
    cache_.erase(lru);
  }
  std::array<char, kMsgSize> msg{};
  geniex_npu_compiled* handle = nullptr;
  const geniex_npu_status rc =
      plugin_->api().compile(plugin_->device(), &desc.graph, &handle, msg.data(), msg.size());
  msg.back() = '\0';
  if (rc != GENIEX_NPU_OK) return from_plugin(rc, plugin_->name(), "compile", msg.data());
  if (handle == nullptr) {
    return internal_error("npu plugin '" + plugin_->name() + "' compile returned no handle");
  }
  cache_[key] = Entry{handle, desc.weight_ptrs, outputs, ++clock_};
  return handle;
}

Result<std::vector<geniex_npu_buffer>> NpuBackend::buffers(const graph::Graph& g,
                                                           const graph::BindingsAccess& b) const {
  std::vector<geniex_npu_buffer> out;
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    const auto count = static_cast<uint64_t>(n.desc.nelements());
    if (n.role == NodeRole::kInput) {
      if (n.desc.dtype == GgmlType::kI32) {
        auto it = b.i32_inputs().find(id);
        if (it == b.i32_inputs().end() || it->second.size() != count) {
          return invalid_argument(who(g, id) + ": I32 input is not bound with " +
                                  std::to_string(count) + " elements");
        }
        out.push_back({id, const_cast<int32_t*>(it->second.data()), count * 4});
      } else {
        auto it = b.f32_inputs().find(id);
        if (it == b.f32_inputs().end() || it->second.size() != count) {
          return invalid_argument(who(g, id) + ": F32 input is not bound with " +
                                  std::to_string(count) + " elements");
        }
        out.push_back({id, const_cast<float*>(it->second.data()), count * 4});
      }
    } else if (n.role == NodeRole::kState) {
      auto it = b.states().find(id);
      const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
      const uint64_t need = row ? *row * static_cast<uint64_t>(n.desc.nrows()) : 0;
      if (it == b.states().end() || it->second.type != n.desc.dtype ||
          it->second.bytes.size() < need) {
        return invalid_argument(who(g, id) + ": state is not bound with " + std::to_string(need) +
                                " bytes of " + n.desc.to_string());
      }
      out.push_back({id, it->second.bytes.data(), it->second.bytes.size()});
    }
  }
  for (const auto& [id, dst] : b.outputs()) {
    if (id >= g.size()) {
      return invalid_argument("output binding names missing node " + std::to_string(id));
    }
    const auto count = static_cast<uint64_t>(g.node(id).desc.nelements());
    if (g.node(id).desc.dtype == GgmlType::kI32 || dst.size() != count) {
      return invalid_argument(who(g, id) + ": output buffer has " + std::to_string(dst.size()) +
                              " elements, expected " + std::to_string(count) + " F32");
    }
    out.push_back({id, dst.data(), count * 4});
  }
  return out;
}

Status NpuBackend::run(const graph::Graph& g, const graph::Bindings& bindings) {
  const graph::BindingsAccess b(bindings);
  for (NodeId id = 0; id < g.size(); ++id) {
    const OpSupport s = supports(g, id);
    if (s.level == Support::kUnsupported) {
      return unimplemented(who(g, id) + " (" + std::string(graph::op_name(g.node(id).op)) +
                           "): " + s.reason);
    }
  }
  std::vector<NodeId> outputs;
  for (const auto& [id, dst] : b.outputs()) outputs.push_back(id);
  std::sort(outputs.begin(), outputs.end());
  GENIEX_ASSIGN_OR_RETURN(std::vector<geniex_npu_buffer> bufs, buffers(g, b));
  GENIEX_ASSIGN_OR_RETURN(geniex_npu_compiled * handle, compiled(g, b, outputs));
  // The NPU runs the graph as a whole: every hook first, in node order (they may fill the bound
  // index inputs and page state in; buffers are read only when execute runs).
  for (NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).role == NodeRole::kOp) GENIEX_TRY(b.run_hook(id));
  }
  std::array<char, kMsgSize> msg{};
  const geniex_npu_status rc =
      plugin_->api().execute(plugin_->device(), handle, bufs.data(),
                             static_cast<uint32_t>(bufs.size()), msg.data(), msg.size());
  msg.back() = '\0';
  return from_plugin(rc, plugin_->name(), "execute", msg.data());
}

}  // namespace

Result<std::unique_ptr<Backend>> make_npu_backend(std::unique_ptr<npu::LoadedNpuPlugin> plugin,
                                                  const NpuOptions& options) {
  if (!plugin) return invalid_argument("make_npu_backend: no plugin");
  return std::unique_ptr<Backend>(new NpuBackend(std::move(plugin), options.max_cached_graphs));
}

Result<std::unique_ptr<Backend>> make_npu_backend(const std::filesystem::path& path,
                                                  const NpuOptions& options) {
  GENIEX_ASSIGN_OR_RETURN(auto plugin, npu::LoadedNpuPlugin::open(path, options.config));
  return make_npu_backend(std::move(plugin), options);
}

Result<std::vector<std::unique_ptr<Backend>>> make_npu_backends(const NpuOptions& options) {
  std::vector<std::filesystem::path> dirs;
  if (!options.plugin_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(options.plugin_dir, ec)) {
      return not_found("NPU plugin folder '" + options.plugin_dir.string() +
                       "' is not a directory");
    }
    dirs.push_back(options.plugin_dir);
  } else {
    dirs = npu::default_plugin_dirs();
  }
  npu::LoadedNpuPlugins loaded = npu::load_npu_plugins(dirs, options.config);
  for (const std::string& note : loaded.notes) {
    if (options.notes != nullptr) {
      options.notes->push_back(note);
    } else {
      std::fprintf(stderr, "geniex: %s\n", note.c_str());
    }
  }
  std::vector<std::unique_ptr<Backend>> out;
  for (auto& p : loaded.plugins) {
    GENIEX_ASSIGN_OR_RETURN(auto backend, make_npu_backend(std::move(p), options));
    out.push_back(std::move(backend));
  }
  return out;
}

}  // namespace geniex::backends
