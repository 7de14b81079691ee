// Value types of the public API as Python classes: Device, CancelToken, GenerationConfig,
// Generation, Timings, log-probabilities, ModelInfo, KvStats, EngineStats, Piece.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "bindings.h"
#include "generation_worker.h"
#include "geniex/geniex.hpp"
#include "status_error.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace geniex::python {
namespace {

void bind_device(nb::module_& m) {
  nb::class_<Device>(m, "Device", "Where a model runs: auto, cpu, gpu or npu.")
      .def_static("automatic", &Device::automatic, "NPU, then GPU, then CPU (the default).")
      .def_static("cpu", &Device::cpu)
      .def_static("gpu", &Device::gpu)
      .def_static("npu", &Device::npu)
      .def_static(
          "parse", [](std::string_view name) { return unwrap(Device::parse(name)); }, "name"_a,
          "\"auto\", \"cpu\", \"gpu\" or \"npu\"; anything else raises InvalidArgument.")
      .def_prop_ro("name", [](const Device& d) { return std::string(d.name()); })
      .def("__eq__", [](const Device& a, const Device& b) { return a.kind() == b.kind(); })
      .def("__repr__",
           [](const Device& d) { return "geniex.Device('" + std::string(d.name()) + "')"; });
}

void bind_cancel(nb::module_& m) {
  nb::class_<PyCancelToken>(m, "CancelToken",
                            "Cancels a generation from any thread: pass it as `cancel=` and call "
                            "cancel(). Checked per prefill chunk and per token; once cancelled "
                            "it stays cancelled.")
      .def(nb::init<>())
      .def("cancel", [](const PyCancelToken& t) { t.token->cancel(); })
      .def_prop_ro("cancelled", [](const PyCancelToken& t) { return t.token->cancelled(); });
}

void bind_config(nb::module_& m) {
  nb::class_<GenerationConfig>(m, "GenerationConfig",
                               "Sampling and stopping for one generation (llama.cpp's defaults). "
                               "GenerationConfig(max_tokens=64, temperature=0) sets fields by "
                               "name; temperature 0 is greedy.")
      .def(
          "__init__",
          [](GenerationConfig* self, const nb::kwargs& fields) {
            new (self) GenerationConfig(merged_config(nullptr, fields));
          },
          "fields"_a, "The defaults, with the given fields set.")
      .def(nb::init<const GenerationConfig&>(), "other"_a, "A copy of `other`.")
      .def_rw("max_tokens", &GenerationConfig::max_tokens, "Most tokens to generate (>= 0).")
      .def_rw("temperature", &GenerationConfig::temperature, "0 = greedy.")
      .def_rw("top_k", &GenerationConfig::top_k, "0 = off.")
      .def_rw("top_p", &GenerationConfig::top_p, "1 = off.")
      .def_rw("min_p", &GenerationConfig::min_p, "0 = off.")
      .def_rw("repetition_penalty", &GenerationConfig::repetition_penalty, "1 = off.")
      .def_rw("presence_penalty", &GenerationConfig::presence_penalty, "0 = off.")
      .def_rw("frequency_penalty", &GenerationConfig::frequency_penalty, "0 = off.")
      .def_rw("penalty_last_n", &GenerationConfig::penalty_last_n,
              "Window of the penalties; -1 = the whole context.")
      .def_rw("seed", &GenerationConfig::seed, "Sampler seed; None = a fresh one per call.")
      .def_rw("stop", &GenerationConfig::stop,
              "Generation stops before the first of these strings.")
      .def_rw("ignore_eos", &GenerationConfig::ignore_eos,
              "Keep going after end-of-generation tokens.")
      .def_rw("parse_special", &GenerationConfig::parse_special,
              "Text prompts: turn special-token text into the special tokens.")
      .def_rw("add_special", &GenerationConfig::add_special,
              "Text prompts: add BOS and other automatic specials.")
      .def_rw("logprobs", &GenerationConfig::logprobs,
              "-1 = off; k >= 0: each token's log-probability and the k most likely.")
      .def_rw("json_schema", &GenerationConfig::json_schema,
              "Structured output: a JSON Schema (JSON text) the reply must satisfy; sampling is "
              "constrained so the reply always validates. An unsupported keyword raises "
              "InvalidArgument naming it. '' = off.")
      .def("__repr__", [](const GenerationConfig& c) {
        return "GenerationConfig(max_tokens=" + std::to_string(c.max_tokens) +
               ", temperature=" + std::to_string(c.temperature) +
               ", top_k=" + std::to_string(c.top_k) + ", top_p=" + std::to_string(c.top_p) +
               ", min_p=" + std::to_string(c.min_p) + ")";
      });
}

void bind_results(nb::module_& m) {
  nb::class_<Timings>(m, "Timings", "Speed of one generation.")
      .def_ro("prompt_tokens", &Timings::prompt_tokens)
      .def_ro("cached_tokens", &Timings::cached_tokens)
      .def_ro("generated_tokens", &Timings::generated_tokens)
      .def_ro("prompt_ms", &Timings::prompt_ms)
      .def_ro("generation_ms", &Timings::generation_ms)
      .def_ro("ttft_ms", &Timings::ttft_ms)
      .def_prop_ro("prompt_tokens_per_second", &Timings::prompt_tokens_per_second)
      .def_prop_ro("generation_tokens_per_second", &Timings::generation_tokens_per_second);
  nb::class_<TokenLogprob>(m, "TokenLogprob")
      .def_ro("token", &TokenLogprob::token)
      .def_ro("logprob", &TokenLogprob::logprob);
  nb::class_<TokenLogprobs>(m, "TokenLogprobs")
      .def_ro("chosen", &TokenLogprobs::chosen)
      .def_ro("top", &TokenLogprobs::top);
  nb::class_<Generation>(m, "Generation", "The result of generate() / chat().")
      .def_prop_ro(
          "text", [](const Generation& g) { return to_str(g.text); },
          "Generated text (no stop string, no end-of-generation token text).")
      .def_ro("prompt_tokens", &Generation::prompt_tokens, "What the model was fed.")
      .def_ro("tokens", &Generation::tokens, "Generated ids (with a final EOG token if any).")
      .def_ro("logprobs", &Generation::logprobs)
      .def_prop_ro(
          "stop_reason",
          [](const Generation& g) { return std::string(stop_reason_name(g.stop_reason)); },
          "\"eog\", \"length\", \"stop\", \"cancelled\" or \"context_full\".")
      .def_ro("timings", &Generation::timings)
      .def_ro("seed", &Generation::seed, "The sampler's seed (repeatable).")
      .def("__str__", [](const Generation& g) { return to_str(g.text); })
      .def("__repr__", [](const Generation& g) {
        return "Generation(stop_reason='" + std::string(stop_reason_name(g.stop_reason)) +
               "', tokens=" + std::to_string(g.tokens.size()) + ")";
      });
  nb::class_<Piece>(m, "Piece", "One piece of streamed text and the token that completed it.")
      .def_prop_ro("text", [](const Piece& p) { return to_str(p.text); })
      .def_ro("token", &Piece::token)
      .def("__str__", [](const Piece& p) { return to_str(p.text); })
      .def("__repr__", [](const Piece& p) {
        return nb::str("Piece(text={!r}, token={})").format(to_str(p.text), p.token);
      });
}

void bind_stats(nb::module_& m) {
  nb::class_<ModelInfo>(m, "ModelInfo", "Facts about a loaded model.")
      .def_ro("path", &ModelInfo::path)
      .def_ro("architecture", &ModelInfo::architecture)
      .def_ro("name", &ModelInfo::name)
      .def_ro("n_params", &ModelInfo::n_params)
      .def_ro("file_bytes", &ModelInfo::file_bytes)
      .def_ro("n_layer", &ModelInfo::n_layer)
      .def_ro("n_embd", &ModelInfo::n_embd)
      .def_ro("n_vocab", &ModelInfo::n_vocab)
      .def_ro("n_ctx_train", &ModelInfo::n_ctx_train)
      .def_ro("n_ctx", &ModelInfo::n_ctx)
      .def_ro("n_threads", &ModelInfo::n_threads)
      .def_ro("bos_token", &ModelInfo::bos_token)
      .def_ro("add_bos", &ModelInfo::add_bos)
      .def_ro("chat_template_origin", &ModelInfo::chat_template_origin)
      .def_ro("warnings", &ModelInfo::warnings)
      .def_ro("placement", &ModelInfo::placement)
      .def_ro("mmproj_path", &ModelInfo::mmproj_path)
      .def_ro("image_marker", &ModelInfo::image_marker);
  nb::class_<KvStats>(m, "KvStats", "The KV cache's memory.")
      .def_ro("bytes_per_token", &KvStats::bytes_per_token)
      .def_ro("blocks_in_use", &KvStats::blocks_in_use)
      .def_ro("blocks_cached", &KvStats::blocks_cached)
      .def_ro("bytes_resident", &KvStats::bytes_resident)
      .def_ro("bytes_spilled", &KvStats::bytes_spilled)
      .def_ro("prefix_hits", &KvStats::prefix_hits)
      .def_ro("cached_tokens", &KvStats::cached_tokens)
      .def_ro("snapshot_bytes", &KvStats::snapshot_bytes);
  nb::class_<EngineStats>(m, "EngineStats", "The batching engine's counters.")
      .def_ro("steps", &EngineStats::steps)
      .def_ro("batched_tokens", &EngineStats::batched_tokens)
      .def_ro("active", &EngineStats::active)
      .def_ro("queued", &EngineStats::queued)
      .def_ro("fallbacks", &EngineStats::fallbacks)
      .def_ro("boundary_bytes", &EngineStats::boundary_bytes);
}

}  // namespace

GenerationConfig merged_config(const GenerationConfig* config, const nb::kwargs& overrides) {
  GenerationConfig c = config ? *config : GenerationConfig{};
  if (overrides.size() == 0) return c;
  nb::object obj = nb::cast(c);
  for (auto [key, value] : overrides) {
    if (!nb::hasattr(obj, key)) {
      throw nb::type_error(nb::str("unexpected keyword argument {!r}: not a GenerationConfig field")
                               .format(key)
                               .c_str());
    }
    nb::setattr(obj, key, value);
  }
  return nb::cast<GenerationConfig>(obj);
}

void bind_types(nb::module_& m) {
  bind_device(m);
  bind_cancel(m);
  bind_config(m);
  bind_results(m);
  bind_stats(m);
}

}  // namespace geniex::python
