// ModelBuilder, Model and TokenStream. Every blocking call releases the GIL. Generations run on a
// GenerationWorker thread while the caller waits GIL-free in short slices: callbacks run on the
// calling thread with the GIL, Ctrl-C (PyErr_CheckSignals) cancels within a slice plus one engine
// step, and an exception raised by a callback cancels the generation and propagates.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "chat_messages.h"
#include "generation_worker.h"
#include "geniex/geniex.hpp"
#include "status_error.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace geniex::python {
namespace {

// How long the caller waits GIL-free before it looks for a pending signal (Ctrl-C).
constexpr std::chrono::milliseconds kSlice{50};

// The package's plugins folder (set by geniex/__init__.py), used when with_plugin_dir was not.
std::string& default_plugin_dir() {
  static std::string dir;
  return dir;
}

class PyModel {
 public:
  explicit PyModel(Model m) : model_(std::make_shared<Model>(std::move(m))) {}

  /// The model, or ValueError after close(). The copy keeps it alive during a call.
  [[nodiscard]] std::shared_ptr<Model> get() const {
    if (!model_) throw nb::value_error("the model is closed");
    return model_;
  }
  [[nodiscard]] bool closed() const { return !model_; }
  void close() {
    std::shared_ptr<Model> last = std::move(model_);
    nb::gil_scoped_release unlocked;
    last.reset();  // frees the model unless a generation still runs (it frees it at its end)
  }

 private:
  std::shared_ptr<Model> model_;
};

std::vector<int32_t> to_tokens(nb::handle seq) {
  if (nb::hasattr(seq, "tolist")) return nb::cast<std::vector<int32_t>>(seq.attr("tolist")());
  return nb::cast<std::vector<int32_t>>(seq);
}

// Waits for the worker's end, handing each piece to `on_token` (None, or a callable returning
// False to stop). Ctrl-C or an exception in `on_token` cancels the generation and propagates.
Generation drain(GenerationWorker& w, nb::handle on_token) {
  const bool has_callback = !on_token.is_none();
  Piece piece;
  for (;;) {
    GenerationWorker::Next next;
    {
      nb::gil_scoped_release unlocked;
      next = w.next(piece, kSlice);
    }
    if (PyErr_CheckSignals() != 0) {
      w.cancel();
      throw nb::python_error();
    }
    if (next == GenerationWorker::Next::kDone) break;
    if (next == GenerationWorker::Next::kTimeout || !has_callback) continue;
    bool go_on = false;
    try {
      nb::object r = on_token(to_str(piece.text), piece.token);
      go_on = r.is_none() || PyObject_IsTrue(r.ptr()) == 1;
    } catch (...) {
      w.cancel();
      throw;
    }
    w.answer(go_on);
  }
  Result<Generation> r = w.take_result();
  nb::gil_scoped_release unlocked;  // the Generation's vectors are freed below without the GIL
  return unwrap(std::move(r));
}

// The job of a generate() call: a text prompt (with images when given) or token ids.
GenerationWorker::Job generate_job(std::shared_ptr<Model> model, nb::handle prompt,
                                   std::vector<Image> images) {
  if (nb::isinstance<nb::str>(prompt)) {
    return [model = std::move(model), text = nb::cast<std::string>(prompt),
            imgs = std::move(images)](const GenerationConfig& c, const TokenCallback& cb) {
      if (imgs.empty()) return model->generate(std::string_view(text), c, cb);
      return model->generate(std::string_view(text), std::span<const Image>(imgs), c, cb);
    };
  }
  if (!images.empty()) throw StatusError(invalid_argument("images need a text prompt"));
  return [model = std::move(model), ids = to_tokens(prompt)](const GenerationConfig& c,
                                                             const TokenCallback& cb) {
    return model->generate(std::span<const int32_t>(ids), c, cb);
  };
}

GenerationWorker::Job chat_job(std::shared_ptr<Model> model, nb::handle messages) {
  return [model = std::move(model), msgs = to_messages(messages)](const GenerationConfig& c,
                                                                  const TokenCallback& cb) {
    return model->chat(std::span<const ChatMessage>(msgs), c, cb);
  };
}

std::shared_ptr<CancelToken> token_of(const PyCancelToken* cancel) {
  return cancel ? cancel->token : nullptr;
}

class PyTokenStream {
 public:
  explicit PyTokenStream(std::shared_ptr<GenerationWorker> w) : worker_(std::move(w)) {}
  ~PyTokenStream() {
    if (!finished_) worker_->cancel();
  }
  PyTokenStream(const PyTokenStream&) = delete;
  PyTokenStream& operator=(const PyTokenStream&) = delete;

  /// The next piece; StopIteration at the end (the result is then ready).
  Piece next() {
    Piece piece;
    if (finished_ || !step(piece)) throw nb::stop_iteration();
    return piece;
  }
  void cancel() { worker_->cancel(); }
  /// Drains what is left and returns the Generation.
  const Generation& result() {
    Piece piece;
    while (!finished_) step(piece);
    if (!result_) throw nb::value_error("the generation failed (its error was raised before)");
    return *result_;
  }

 private:
  // One piece (true) or the end (false; result_ set, or its error raised). The worker waits for
  // each piece's answer: asking for the next piece says "go on", so after cancel() the result
  // holds exactly the pieces this stream yielded.
  bool step(Piece& piece) {
    if (awaiting_answer_) {
      awaiting_answer_ = false;
      worker_->answer(true);
    }
    for (;;) {
      GenerationWorker::Next next;
      {
        nb::gil_scoped_release unlocked;
        next = worker_->next(piece, kSlice);
      }
      if (PyErr_CheckSignals() != 0) {
        worker_->cancel();
        throw nb::python_error();
      }
      if (next == GenerationWorker::Next::kPiece) {
        awaiting_answer_ = true;
        return true;
      }
      if (next == GenerationWorker::Next::kDone) break;
    }
    finished_ = true;
    result_ = unwrap(worker_->take_result());
    return false;
  }

  std::shared_ptr<GenerationWorker> worker_;
  bool awaiting_answer_ = false;
  bool finished_ = false;
  std::optional<Generation> result_;
};

struct PyModelBuilder {
  ModelBuilder builder;
  bool plugin_dir_set = false;
};

void bind_builder(nb::module_& m) {
  auto cls = nb::class_<PyModelBuilder>(m, "ModelBuilder",
                                        "Configures and loads a Model: "
                                        "ModelBuilder(path).with_device('cpu').build().");
  cls.def(
      "__init__",
      [](PyModelBuilder* self, const std::filesystem::path& path) {
        new (self) PyModelBuilder{ModelBuilder(path.string())};
      },
      "path"_a, "The model's GGUF file.");
  cls.def(
      "with_device",
      [](nb::handle self, nb::handle device) {
        Device d = nb::isinstance<Device>(device)
                       ? nb::cast<Device>(device)
                       : unwrap(Device::parse(nb::cast<std::string>(device)));
        nb::cast<PyModelBuilder&>(self).builder.with_device(d);
        return nb::borrow(self);
      },
      "device"_a, "A Device or 'auto', 'cpu', 'gpu', 'npu'.",
      nb::sig("def with_device(self, device: Device | str) -> ModelBuilder"));
  cls.def(
      "with_offload_layers",
      [](nb::handle self, int32_t n) {
        nb::cast<PyModelBuilder&>(self).builder.with_offload_layers(n);
        return nb::borrow(self);
      },
      "n"_a,
      "Decoder layers on the device's accelerator: the last n (and the output head when n >= 1), "
      "the rest on the CPU; 0 = all on the CPU; -1 (default) = no limit.",
      nb::sig("def with_offload_layers(self, n: int) -> ModelBuilder"));
  cls.def(
      "with_context_size",
      [](nb::handle self, int32_t n) {
        nb::cast<PyModelBuilder&>(self).builder.with_context_size(n);
        return nb::borrow(self);
      },
      "n_ctx"_a, "Context window in tokens (default 4096; 0 = the model's training context).",
      nb::sig("def with_context_size(self, n_ctx: int) -> ModelBuilder"));
  cls.def(
      "with_threads",
      [](nb::handle self, int32_t n) {
        nb::cast<PyModelBuilder&>(self).builder.with_threads(n);
        return nb::borrow(self);
      },
      "n_threads"_a, "Worker threads (default 0: the CPUs this process may use).",
      nb::sig("def with_threads(self, n_threads: int) -> ModelBuilder"));
  cls.def(
      "with_batch_size",
      [](nb::handle self, int32_t n) {
        nb::cast<PyModelBuilder&>(self).builder.with_batch_size(n);
        return nb::borrow(self);
      },
      "n_batch"_a, "Most prompt tokens evaluated in one step (default 512).",
      nb::sig("def with_batch_size(self, n_batch: int) -> ModelBuilder"));
  cls.def(
      "with_kv_cache_type",
      [](nb::handle self, std::string_view type) {
        nb::cast<PyModelBuilder&>(self).builder.with_kv_cache_type(
            unwrap(parse_kv_cache_type(type)));
        return nb::borrow(self);
      },
      "kv_cache_type"_a, "'f16' (default), 'f32', 'q8_0' or 'q4_0'.",
      nb::sig("def with_kv_cache_type(self, kv_cache_type: str) -> ModelBuilder"));
  cls.def(
      "with_kv_budget",
      [](nb::handle self, int64_t bytes, std::string spill_dir) {
        nb::cast<PyModelBuilder&>(self).builder.with_kv_budget(bytes, std::move(spill_dir));
        return nb::borrow(self);
      },
      "bytes"_a, "spill_dir"_a = "",
      "Most KV bytes in memory (0: no limit); beyond it blocks spill to `spill_dir`.",
      nb::sig("def with_kv_budget(self, bytes: int, spill_dir: str = \"\") -> ModelBuilder"));
  cls.def(
      "with_max_sequences",
      [](nb::handle self, int32_t n) {
        nb::cast<PyModelBuilder&>(self).builder.with_max_sequences(n);
        return nb::borrow(self);
      },
      "n"_a, "Sequences generating at once (default 4); concurrent calls are batched.",
      nb::sig("def with_max_sequences(self, n: int) -> ModelBuilder"));
  cls.def(
      "with_context_overflow",
      [](nb::handle self, std::string_view policy, int32_t n_keep) {
        ContextOverflow p;
        if (policy == "stop") {
          p = ContextOverflow::kStop;
        } else if (policy == "shift") {
          p = ContextOverflow::kShift;
        } else {
          throw StatusError(invalid_argument("context_overflow must be 'stop' or 'shift', got '" +
                                             std::string(policy) + "'"));
        }
        nb::cast<PyModelBuilder&>(self).builder.with_context_overflow(p, n_keep);
        return nb::borrow(self);
      },
      "policy"_a, "n_keep"_a = 0, "'stop' (default) or 'shift' (keep n_keep tokens).",
      nb::sig("def with_context_overflow(self, policy: str, n_keep: int = 0) -> ModelBuilder"));
  cls.def(
      "with_plugin_dir",
      [](nb::handle self, const std::filesystem::path& dir) {
        auto& b = nb::cast<PyModelBuilder&>(self);
        b.builder.with_plugin_dir(dir.string());
        b.plugin_dir_set = true;
        return nb::borrow(self);
      },
      "dir"_a, "Folder of NPU plugins (default: the package's plugins folder).",
      nb::sig("def with_plugin_dir(self, dir: str | os.PathLike[str]) -> ModelBuilder"));
  cls.def(
      "with_npu_config",
      [](nb::handle self, std::string config) {
        nb::cast<PyModelBuilder&>(self).builder.with_npu_config(std::move(config));
        return nb::borrow(self);
      },
      "config"_a, "'key=value;...' handed to every NPU plugin.",
      nb::sig("def with_npu_config(self, config: str) -> ModelBuilder"));
  cls.def(
      "with_deterministic",
      [](nb::handle self, bool on) {
        nb::cast<PyModelBuilder&>(self).builder.with_deterministic(on);
        return nb::borrow(self);
      },
      "on"_a = true, "Bit-identical output alone or batched (slower for some weight types).",
      nb::sig("def with_deterministic(self, on: bool = True) -> ModelBuilder"));
  cls.def(
      "with_mmproj",
      [](nb::handle self, const std::filesystem::path& path) {
        nb::cast<PyModelBuilder&>(self).builder.with_mmproj(path.string());
        return nb::borrow(self);
      },
      "path"_a, "The mmproj GGUF that makes this a vision-language model.",
      nb::sig("def with_mmproj(self, path: str | os.PathLike[str]) -> ModelBuilder"));
  cls.def(
      "build",
      [](const PyModelBuilder& self) {
        ModelBuilder b = self.builder;
        if (!self.plugin_dir_set && !default_plugin_dir().empty()) {
          b.with_plugin_dir(default_plugin_dir());
        }
        Result<Model> r = [&] {
          nb::gil_scoped_release unlocked;
          return b.build();
        }();
        return PyModel(unwrap(std::move(r)));
      },
      "Loads the model (GIL released). Raises ModelNotFound, DataLoss, InvalidArgument, ...");
}

void bind_stream(nb::module_& m) {
  nb::class_<PyTokenStream>(m, "TokenStream",
                            "Iterator of Piece(text, token) as the model generates; cancel() "
                            "stops it, result is the Generation (after the last piece).")
      .def(
          "__iter__", [](nb::handle self) { return nb::borrow(self); },
          nb::sig("def __iter__(self) -> TokenStream"))
      .def("__next__", &PyTokenStream::next)
      .def("cancel", &PyTokenStream::cancel, "Stops the generation at its next step.")
      .def_prop_ro("result", &PyTokenStream::result, nb::rv_policy::copy,
                   "The Generation; waits for the end (draining pieces not yet read).")
      .def(
          "__enter__", [](nb::handle self) { return nb::borrow(self); },
          nb::sig("def __enter__(self) -> TokenStream"))
      .def(
          "__exit__", [](PyTokenStream& s, nb::args) { s.cancel(); },
          "Cancels the generation if it still runs.");
}

void bind_model_class(nb::module_& m) {
  auto cls = nb::class_<PyModel>(m, "Model",
                                 "A loaded model. Thread-safe: concurrent generate() calls from "
                                 "Python threads are batched by the engine.");
  cls.def(
      "generate",
      [](PyModel& self, nb::handle prompt, const GenerationConfig* config, nb::handle on_token,
         const PyCancelToken* cancel, nb::handle images, const nb::kwargs& overrides) {
        GenerationConfig c = merged_config(config, overrides);
        auto job = generate_job(self.get(), prompt, to_images(images));
        auto w = GenerationWorker::start(std::move(job), std::move(c), token_of(cancel),
                                         !on_token.is_none());
        return drain(*w, on_token);
      },
      "prompt"_a, "config"_a.none() = nb::none(), nb::kw_only(), "on_token"_a.none() = nb::none(),
      "cancel"_a.none() = nb::none(), "images"_a.none() = nb::none(), "overrides"_a,
      "Completes a text prompt (raw, no chat template) or a list of token ids. on_token(text, "
      "token) sees each piece; returning False stops (None goes on). Keyword overrides set "
      "GenerationConfig fields.",
      nb::sig("def generate(self, prompt: str | collections.abc.Sequence[int], config: "
              "GenerationConfig | None = None, *, on_token: collections.abc.Callable[[str, int], "
              "bool | None] | None = None, cancel: CancelToken | None = None, images: "
              "collections.abc.Sequence[str | os.PathLike[str] | bytes] | None = None, "
              "**overrides: typing.Any) -> Generation"));
  cls.def(
      "chat",
      [](PyModel& self, nb::handle messages, const GenerationConfig* config, nb::handle on_token,
         const PyCancelToken* cancel, const nb::kwargs& overrides) {
        GenerationConfig c = merged_config(config, overrides);
        auto w = GenerationWorker::start(chat_job(self.get(), messages), std::move(c),
                                         token_of(cancel), !on_token.is_none());
        return drain(*w, on_token);
      },
      "messages"_a, "config"_a.none() = nb::none(), nb::kw_only(), "on_token"_a.none() = nb::none(),
      "cancel"_a.none() = nb::none(), "overrides"_a,
      "Applies the chat template to messages ([{'role': 'user', 'content': ...}]) and "
      "generates the reply.",
      nb::sig("def chat(self, messages: collections.abc.Sequence[collections.abc.Mapping[str, "
              "typing.Any]], config: GenerationConfig | None = None, *, on_token: "
              "collections.abc.Callable[[str, int], bool | None] | None = None, cancel: "
              "CancelToken | None = None, **overrides: typing.Any) -> Generation"));
  cls.def(
      "stream",
      [](PyModel& self, nb::handle prompt, const GenerationConfig* config,
         const PyCancelToken* cancel, const nb::kwargs& overrides) {
        GenerationConfig c = merged_config(config, overrides);
        const bool text_or_ids = nb::isinstance<nb::str>(prompt) ||
                                 (nb::len(prompt) > 0 && !nb::isinstance<nb::dict>(prompt[0]) &&
                                  !nb::hasattr(prompt[0], "role"));
        auto job =
            text_or_ids ? generate_job(self.get(), prompt, {}) : chat_job(self.get(), prompt);
        return new PyTokenStream(
            GenerationWorker::start(std::move(job), std::move(c), token_of(cancel), true));
      },
      "prompt_or_messages"_a, "config"_a.none() = nb::none(), nb::kw_only(),
      "cancel"_a.none() = nb::none(), "overrides"_a,
      "Like generate() (a str or token ids) or chat() (messages), as an iterator of pieces.",
      nb::sig("def stream(self, prompt_or_messages: str | collections.abc.Sequence[int] | "
              "collections.abc.Sequence[collections.abc.Mapping[str, typing.Any]], config: "
              "GenerationConfig | None = None, *, cancel: CancelToken | None = None, **overrides: "
              "typing.Any) -> TokenStream"));
  cls.def(
      "apply_chat_template",
      [](PyModel& self, nb::handle messages, bool add_generation_prompt, nb::handle tools,
         nb::handle extra_context) {
        auto model = self.get();
        auto msgs = to_messages(messages);
        ChatTemplateOptions opts;
        if (!tools.is_none()) opts.tools = json_text(tools);
        if (!extra_context.is_none()) opts.extra_context = json_text(extra_context);
        Result<std::string> r = [&] {
          nb::gil_scoped_release unlocked;
          return model->apply_chat_template(msgs, add_generation_prompt, opts);
        }();
        return to_str(unwrap(std::move(r)));
      },
      "messages"_a, "add_generation_prompt"_a = true, nb::kw_only(), "tools"_a.none() = nb::none(),
      "extra_context"_a.none() = nb::none(),
      "The chat template's rendering; tools (a list of JSON-schema tool dicts) and extra_context "
      "(more template variables, e.g. {'enable_thinking': False, 'documents': [...]}) as "
      "transformers passes them.",
      nb::sig("def apply_chat_template(self, messages: "
              "collections.abc.Sequence[collections.abc.Mapping[str, typing.Any]], "
              "add_generation_prompt: bool = True, *, tools: "
              "collections.abc.Sequence[collections.abc.Mapping[str, typing.Any]] | None = None, "
              "extra_context: collections.abc.Mapping[str, typing.Any] | None = None) -> str"));
  cls.def(
      "chat_tokens",
      [](PyModel& self, nb::handle messages) {
        auto model = self.get();
        auto msgs = to_messages(messages);
        nb::gil_scoped_release unlocked;
        return unwrap(model->chat_tokens(msgs));
      },
      "messages"_a, "The ids chat() feeds the model for messages.",
      nb::sig("def chat_tokens(self, messages: "
              "collections.abc.Sequence[collections.abc.Mapping[str, typing.Any]]) -> list[int]"));
  cls.def(
      "tokenize",
      [](PyModel& self, std::string_view text, bool add_special, bool parse_special) {
        auto model = self.get();
        nb::gil_scoped_release unlocked;
        return unwrap(model->tokenize(text, add_special, parse_special));
      },
      "text"_a, "add_special"_a = true, "parse_special"_a = false);
  cls.def(
      "detokenize",
      [](PyModel& self, nb::handle tokens) {
        auto model = self.get();
        std::vector<int32_t> ids = to_tokens(tokens);
        Result<std::string> r = [&] {
          nb::gil_scoped_release unlocked;
          return model->detokenize(ids);
        }();
        return to_str(unwrap(std::move(r)));
      },
      "tokens"_a, nb::sig("def detokenize(self, tokens: collections.abc.Sequence[int]) -> str"));
  cls.def(
      "token_piece", [](PyModel& self, int32_t t) { return to_str(self.get()->token_piece(t)); },
      "token"_a, "One token's text, special tokens spelled out; '' for an unknown id.");
  cls.def(
      "is_end_of_generation",
      [](PyModel& self, int32_t t) { return self.get()->is_end_of_generation(t); }, "token"_a);
  cls.def(
      "logits",
      [](PyModel& self, nb::handle tokens, int32_t first_row) {
        auto model = self.get();
        std::vector<int32_t> ids = to_tokens(tokens);
        Result<std::vector<float>> r = [&] {
          nb::gil_scoped_release unlocked;
          return model->logits(ids, first_row);
        }();
        auto* values = new std::vector<float>(unwrap(std::move(r)));
        nb::capsule owner(values,
                          [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
        const auto n_vocab = static_cast<size_t>(model->info().n_vocab);
        const size_t shape[2] = {values->size() / n_vocab, n_vocab};
        return nb::ndarray<nb::numpy, float, nb::ndim<2>>(values->data(), 2, shape, owner);
      },
      "tokens"_a, "first_row"_a = 0,
      "float32 array (rows, n_vocab): logits of positions first_row.. from an empty context.",
      nb::sig("def logits(self, tokens: collections.abc.Sequence[int], first_row: int = 0) -> "
              "numpy.typing.NDArray[numpy.float32]"));
  cls.def(
      "reset",
      [](PyModel& self) {
        auto model = self.get();
        nb::gil_scoped_release unlocked;
        model->reset();
      },
      "Forgets the cached context.");
  cls.def(
      "save_state",
      [](PyModel& self, const std::filesystem::path& path) {
        auto model = self.get();
        nb::gil_scoped_release unlocked;
        check(model->save_state(path.string()));
      },
      "path"_a, "Writes the cached context (tokens and KV) to path.");
  cls.def(
      "load_state",
      [](PyModel& self, const std::filesystem::path& path) {
        auto model = self.get();
        nb::gil_scoped_release unlocked;
        check(model->load_state(path.string()));
      },
      "path"_a, "Replaces the cached context with a saved one.");
  cls.def(
      "special_tokens",
      [](PyModel& self) {
        auto model = self.get();
        nb::gil_scoped_release unlocked;
        std::vector<int32_t> out;
        for (int32_t t = 0; t < model->info().n_vocab; ++t) {
          const int32_t one[1] = {t};
          auto text = model->detokenize(one);
          if (text.ok() && text->empty() && !model->token_piece(t).empty()) out.push_back(t);
        }
        return out;
      },
      "Ids of the special (control) tokens: spelled out by token_piece(), no text when "
      "detokenized (BOS, EOS, turn markers). Scans the vocabulary.");
  cls.def(
      "end_of_generation_tokens",
      [](PyModel& self) {
        auto model = self.get();
        nb::gil_scoped_release unlocked;
        std::vector<int32_t> out;
        for (int32_t t = 0; t < model->info().n_vocab; ++t) {
          if (model->is_end_of_generation(t)) out.push_back(t);
        }
        return out;
      },
      "Ids of the tokens that end generation (EOS, end-of-turn, ...).");
  cls.def("cached_tokens", [](PyModel& self) { return self.get()->cached_tokens(); });
  cls.def("kv_stats", [](PyModel& self) { return self.get()->kv_stats(); });
  cls.def("engine_stats", [](PyModel& self) { return self.get()->engine_stats(); });
  cls.def("explain_placement", [](PyModel& self) { return self.get()->explain_placement(); });
  cls.def_prop_ro(
      "info", [](PyModel& self) { return self.get()->info(); }, "Facts about the model.");
  cls.def_prop_ro("closed", &PyModel::closed);
  cls.def("close", &PyModel::close,
          "Releases the model (a generation still running keeps it until it ends).");
  cls.def(
      "__enter__", [](nb::handle self) { return nb::borrow(self); },
      nb::sig("def __enter__(self) -> Model"));
  cls.def("__exit__", [](PyModel& self, nb::args) { self.close(); });
}

}  // namespace

void bind_model(nb::module_& m) {
  bind_builder(m);
  bind_stream(m);
  bind_model_class(m);
  m.def(
      "_set_default_plugin_dir", [](std::string dir) { default_plugin_dir() = std::move(dir); },
      "dir"_a);
}

}  // namespace geniex::python
