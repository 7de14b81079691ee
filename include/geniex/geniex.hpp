// GenieX public C++ API: load a GGUF model and generate text on the device.
//
//   auto model = geniex::ModelBuilder("gemma-3-270m.gguf")
//                    .with_device(geniex::Device::cpu())
//                    .build();
//   if (!model.ok()) { std::cerr << model.status().to_string(); return 1; }
//   auto out = model->generate("The capital of France is", geniex::GenerationConfig{});
//
// Nothing here throws: every fallible call returns a Status or Result (geniex/status.h).
// A Model is thread-safe: generate()/chat() may be called from many threads at once and the
// calls are batched into shared forward passes (continuous batching, see with_max_sequences).
// Callbacks run on the calling thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "geniex/status.h"

namespace geniex {

/// Where the model should run. The runtime places work on the preferred unit and falls back
/// down the chain NPU -> GPU -> CPU when a unit is missing or cannot run a stage (it logs why).
class Device {
 public:
  enum class Kind { kAuto, kCpu, kGpu, kNpu };

  static Device automatic() { return Device(Kind::kAuto); }
  static Device cpu() { return Device(Kind::kCpu); }
  static Device gpu() { return Device(Kind::kGpu); }
  static Device npu() { return Device(Kind::kNpu); }
  /// "auto", "cpu", "gpu" or "npu"; anything else is kInvalidArgument.
  static Result<Device> parse(std::string_view name);

  [[nodiscard]] Kind kind() const { return kind_; }
  /// "auto", "cpu", "gpu", "npu".
  [[nodiscard]] std::string_view name() const;

 private:
  explicit Device(Kind k) : kind_(k) {}
  Kind kind_;
};

/// Element type of the KV cache.
enum class KvCacheType {
  kF16,   ///< half the memory; llama.cpp's default (the default)
  kF32,   ///< exact: no rounding of keys, values, queries or attention weights
  kQ8_0,  ///< 8.5 bits per value (llama.cpp's q8_0 cache; needs head_dim % 32 == 0)
  kQ4_0,  ///< 4.5 bits per value (llama.cpp's q4_0 cache; needs head_dim % 32 == 0)
};

/// "f16", "f32", "q8_0", "q4_0" -> the type; anything else is kInvalidArgument.
Result<KvCacheType> parse_kv_cache_type(std::string_view name);

/// What happens when a generation fills the context window.
enum class ContextOverflow {
  kStop,   ///< generation ends with StopReason::kContextFull (the default; nothing is lost)
  kShift,  ///< keep the first n_keep tokens, drop the oldest half of the rest, and go on
};

/// The batching engine's counters, for monitoring.
struct EngineStats {
  int64_t steps = 0;           ///< forward passes run
  int64_t batched_tokens = 0;  ///< tokens evaluated over all steps (decode + prefill)
  int32_t active = 0;          ///< requests holding a sequence
  int32_t queued = 0;          ///< requests waiting for a sequence
  int64_t fallbacks = 0;       ///< times a unit failed at run time and its stages moved
  int64_t boundary_bytes = 0;  ///< host buffers for values crossing units (planned, reused)
};

/// Time and copies of one placement segment (a run of stages on one unit), summed over the
/// steps run since load or the last reset_stage_timings().
struct StageTiming {
  std::string stages;     ///< e.g. "layer 0 .. output"
  std::string device;     ///< the backend's name
  int64_t runs = 0;       ///< times it ran
  double ms = 0.0;        ///< wall time inside the backend
  int64_t bytes_in = 0;   ///< bytes read from other segments (stage boundaries only)
  int64_t bytes_out = 0;  ///< bytes written for other segments
};

/// The KV cache's memory, for monitoring.
struct KvStats {
  int64_t bytes_per_token = 0;  ///< K+V bytes one cached token costs over all layers
  int64_t blocks_in_use = 0;    ///< blocks held by the sequence(s)
  int64_t blocks_cached = 0;    ///< blocks kept for prefix reuse only
  int64_t bytes_resident = 0;   ///< KV bytes in memory
  int64_t bytes_spilled = 0;    ///< KV bytes only in the spill file
  int64_t prefix_hits = 0;      ///< prompt tokens served from the prefix cache (lifetime)
  int32_t cached_tokens = 0;    ///< tokens of the current context
  /// Recurrent-state models (LFM2): memory of the per-block state snapshots that let a prompt
  /// resume at a cached block boundary (one per full block: conv layers x n_embd x (L-1) F32).
  int64_t snapshot_bytes = 0;
};

/// Why generation ended.
enum class StopReason {
  kEndOfGeneration,  ///< the model emitted an end-of-generation token
  kMaxTokens,        ///< max_tokens reached
  kStopString,       ///< one of GenerationConfig::stop appeared (it is not part of the text)
  kCancelled,        ///< the token callback returned false, or GenerationConfig::cancel fired
  kContextFull,      ///< the context window has no room for another token
};

/// "eog", "length", "stop", "cancelled", "context_full".
std::string_view stop_reason_name(StopReason r);

/// A token and its log-probability under the model's raw distribution (log-softmax of the
/// logits: no penalties, truncation or temperature).
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;  ///< natural log
};

/// One generated token's log-probability and the most likely tokens at its position.
struct TokenLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  ///< GenerationConfig::logprobs entries, most likely first
};

/// Stops generations from any thread: cancel() makes every generation whose
/// GenerationConfig::cancel points here end at its next step with StopReason::kCancelled, during
/// the prompt's prefill (checked per chunk) as well as between generated tokens. Shared by the
/// caller and the engine; once cancelled it stays cancelled (use a fresh token per call).
class CancelToken {
 public:
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  [[nodiscard]] bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

/// Sampling and stopping for one generation. Defaults are llama.cpp's.
struct GenerationConfig {
  int32_t max_tokens = 256;         ///< upper bound of generated tokens (>= 0)
  float temperature = 0.8f;         ///< 0 = greedy
  int32_t top_k = 40;               ///< 0 = off
  float top_p = 0.95f;              ///< 1 = off
  float min_p = 0.05f;              ///< 0 = off
  float repetition_penalty = 1.0f;  ///< 1 = off
  float presence_penalty = 0.0f;    ///< 0 = off
  float frequency_penalty = 0.0f;   ///< 0 = off
  int32_t penalty_last_n = 64;      ///< window of the penalties; -1 = whole context
  /// Seed of the sampler; unset = a fresh random seed per call. The same seed, prompt and
  /// settings give the same text.
  std::optional<uint64_t> seed;
  /// Generation stops before the first occurrence of any of these (may span tokens).
  std::vector<std::string> stop;
  /// Keep going after end-of-generation tokens (they are still not printed).
  bool ignore_eos = false;
  /// generate(text) only: turn special-token text in the prompt (e.g. "<start_of_turn>")
  /// into the special tokens.
  bool parse_special = false;
  /// generate(text) only: add the vocabulary's BOS (and other automatic specials).
  bool add_special = true;
  /// -1 = off. k >= 0: report each generated token's log-probability and the k most likely
  /// tokens at its position (Generation::logprobs, and on_logprobs as it happens).
  int32_t logprobs = -1;
  /// With logprobs >= 0: called with each token's log-probabilities right after it is
  /// sampled, before its text reaches the TokenCallback. Optional.
  std::function<void(const TokenLogprobs&)> on_logprobs;
  /// Constrained sampling (e.g. JSON output). When set, it is called with candidate tokens
  /// in the sampler's order (greedy: most likely first; else repeated draws with rejected
  /// tokens masked) and the first candidate it accepts is generated, so it may update its
  /// own state when it returns true. No acceptable token -> kInvalidArgument.
  std::function<bool(int32_t token)> token_filter;
  /// Structured output: a JSON Schema (as JSON text) the generated text must satisfy. Sampling
  /// is constrained byte by byte, so the output is always a prefix of one JSON value that
  /// validates, and a complete one when generation ends at end-of-generation (not max_tokens).
  /// The supported subset: check_json_schema(). A schema outside it is kInvalidArgument naming
  /// the keyword. Combines with token_filter (both must accept).
  std::string json_schema;
  /// Print control tokens' text in the output (e.g. Mistral's "[TOOL_CALLS]", LFM2's
  /// "<|tool_call_start|>") instead of dropping it; end-of-generation tokens still end
  /// generation unprinted. For parsers of a model's native tool-call format.
  bool render_special = false;
  /// Called on the caller's thread as the prompt is evaluated: prompt tokens in the context so
  /// far (cached ones included) and the prompt's length; the last call has done == total.
  /// Optional (progress bars for long prompts).
  std::function<void(int32_t done, int32_t total)> on_prefill_progress;
  /// Cancels the generation from another thread (a watcher, a UI, a signal handler's helper):
  /// checked before each prefill chunk and each token; the result keeps the text and tokens
  /// made so far. Optional.
  std::shared_ptr<const CancelToken> cancel;
};

/// Checks a JSON Schema for GenerationConfig::json_schema without generating: OK, or
/// kInvalidArgument naming what is wrong or unsupported. Supported: type (one or a list),
/// object (properties in schema order, required, additionalProperties), array (items, minItems,
/// maxItems), string (minLength, maxLength, format date / time / date-time / uuid), number and
/// integer (minimum, maximum, exclusiveMinimum, exclusiveMaximum), boolean, null, enum, const,
/// anyOf, oneOf (as anyOf), $ref to #/$defs/NAME or #/definitions/NAME; annotations (title,
/// description, default, examples, ...) are ignored.
Status check_json_schema(std::string_view schema_json);

/// Speed of one generation.
struct Timings {
  int32_t prompt_tokens = 0;     ///< tokens of the prompt
  int32_t cached_tokens = 0;     ///< prompt tokens reused from the previous call's context
  int32_t generated_tokens = 0;  ///< tokens sampled
  double prompt_ms = 0;          ///< prefill of the (uncached) prompt tokens
  double generation_ms = 0;      ///< from the first sampled token to the end
  double ttft_ms = 0;            ///< call start to the first token's text
  [[nodiscard]] double prompt_tokens_per_second() const;
  [[nodiscard]] double generation_tokens_per_second() const;
};

/// The result of generate() / chat().
struct Generation {
  std::string text;                     ///< generated text (no stop string, no EOG token text)
  std::vector<int32_t> prompt_tokens;   ///< what the model was fed
  std::vector<int32_t> tokens;          ///< generated ids (incl. a final EOG token if any)
  std::vector<TokenLogprobs> logprobs;  ///< one per element of tokens when config.logprobs >= 0
  StopReason stop_reason = StopReason::kMaxTokens;
  Timings timings;
  uint64_t seed = 0;  ///< the sampler's seed (config.seed, or the random one drawn): repeatable
};

/// Called for each piece of generated text as soon as it is final (stop strings held back).
/// Return false to cancel: generation ends with StopReason::kCancelled.
using TokenCallback = std::function<bool(std::string_view text, int32_t token)>;

/// An image for a vision-language model (a model built with an mmproj file): the encoded bytes
/// of a JPEG, PNG, BMP, GIF (first frame) or WebP file, or the path of one.
struct Image {
  std::string path;            ///< read when `bytes` is empty
  std::vector<uint8_t> bytes;  ///< the encoded file
  static Image from_file(std::string path) { return Image{std::move(path), {}}; }
  static Image from_bytes(std::vector<uint8_t> bytes) { return Image{{}, std::move(bytes)}; }
};

/// One part of a chat message: text, or an image at that place in the message.
struct ContentPart {
  enum class Type { kText, kImage };
  Type type = Type::kText;
  std::string text;
  Image image = {};
  static ContentPart text_part(std::string t) { return ContentPart{Type::kText, std::move(t)}; }
  static ContentPart image_part(Image i) { return ContentPart{Type::kImage, {}, std::move(i)}; }
};

/// A call of a tool (a function) made by the assistant, as OpenAI's `tool_calls` entries.
struct ToolCall {
  std::string id;
  std::string name;
  /// The arguments as JSON text (an object); the chat template sees them parsed, as
  /// transformers expects, or as this string when it is not valid JSON.
  std::string arguments;
};

/// One chat turn; role is "system", "user", "assistant" or "tool" (a tool's result).
struct ChatMessage {
  std::string role;
  std::string content;
  /// When not empty, the message's content instead of `content`: text and images in order
  /// (the chat template sees transformers' list form, [{"type": "image"}, {"type": "text",
  /// "text": ...}]). Images need a vision-language model.
  std::vector<ContentPart> parts = {};
  /// role "assistant": the tools it called (the template renders them its own way).
  std::vector<ToolCall> tool_calls = {};
  /// role "tool": the id of the call this message answers, and the tool's name (optional).
  std::string tool_call_id = {};
  std::string name = {};
};

/// More inputs of the chat template, as transformers' apply_chat_template takes them.
struct ChatTemplateOptions {
  /// The tools the model may call: a JSON array of OpenAI tool definitions
  /// ([{"type": "function", "function": {"name", "description", "parameters"}}]); "" = none
  /// (the template sees `tools` undefined-as-None).
  std::string tools;
  /// More template variables as a JSON object (e.g. {"enable_thinking": false}); "" = none.
  std::string extra_context;
  /// Text appended after the generation prompt: the reply is taken to start with it (e.g. a
  /// tool-call opening tag); it is part of the prompt, not of the generated text.
  std::string reply_prefix;
};

/// Facts about a loaded model.
struct ModelInfo {
  std::string path;
  std::string architecture;  ///< general.architecture
  std::string name;          ///< general.name
  int64_t n_params = 0;
  int64_t file_bytes = 0;
  int32_t n_layer = 0;
  int32_t n_embd = 0;
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  int32_t n_ctx = 0;  ///< the context this Model was built with
  int32_t n_threads = 0;
  int32_t bos_token = -1;  ///< beginning-of-sequence token (-1: none)
  bool add_bos = false;    ///< tokenize(text, add_special=true) starts with bos_token
  /// Where chat() gets its template: "file" (the model's own `tokenizer.chat_template`),
  /// "builtin:FAMILY" (the file has none; GenieX's template for its architecture, e.g.
  /// "builtin:gemma" — often a base model that is not instruction-tuned), or "" (none: chat()
  /// fails with NOT_FOUND).
  std::string chat_template_origin;
  /// Things the user should know about this load even without a log, e.g. that `--device gpu`
  /// landed on a CPU-emulated OpenCL driver. Tools print them on stderr.
  std::vector<std::string> warnings;
  std::string placement;  ///< which backend runs what, e.g. "whole model -> cpu(avx2, 2 threads)"
  /// Vision-language model: the mmproj file whose encoder turns images into the model's
  /// embeddings (empty: text only).
  std::string mmproj_path;
  /// The text that marks an image's place in a raw prompt (generate with images), e.g.
  /// "<image>" for LFM2-VL; empty without an mmproj.
  std::string image_marker;
  /// How embed() pools by default (Pooling::kModel resolved): "mean", "cls", "last", "none".
  std::string pooling;
  /// An encoder that only embeds (bert): generate(), chat() and logits() fail.
  bool embedding_only = false;
};

/// How the CPU backend computes: tuning for benchmarks, tests and unusual hosts. The defaults are
/// what the project measured fastest (docs/performance.md). Fields marked process-wide belong to
/// the CPU kernels, which every model in the process shares: each build sets them to its values
/// (defaults included), so the model built last decides.
struct CpuTuning {
  /// Highest SIMD level of the CPU kernels: "scalar", "sse4", "avx2", "avx512", "avx512vnni"
  /// (x86-64) or "neon", "neon_dotprod", "neon_i8mm" (aarch64). Empty: the best this CPU runs.
  /// A level this CPU lacks or of the other family leaves the best; an unknown name fails
  /// build(). Process-wide.
  std::string isa;
  /// Which matmul weight types are repacked into row-interleaved groups at load.
  enum class Repack : uint8_t {
    kDefault,  ///< Q4_0, Q8_0, Q5_0, and Q4_K on x86 (measured faster, same greedy output)
    kNone,     ///< none: every matmul through the row kernels
    kAll,      ///< every type with a packed kernel (adds Q6_K, and Q4_K on Arm)
  };
  Repack repack = Repack::kDefault;
  /// Weight copies (packed matrices; large unpacked matmul weights) on transparent huge pages
  /// where the kernel grants them (default on). Off: 4 KiB pages, and no copies of unpacked
  /// weights.
  bool huge_pages = true;
  /// Bytes ahead that single-row matmuls prefetch their weights (x86). -1: the default (4096;
  /// off on CPUs with AVX-512 VNNI, measured faster so on AMD Zen 4); 0: off. Process-wide.
  int64_t gemv_prefetch_bytes = -1;
  /// Concurrent weight streams of a single-row matmul, 1..4. 0: the default (2 on x86, 1 on
  /// x86 with AVX-512 VNNI and on Arm). Process-wide.
  int32_t gemv_streams = 0;
};

/// Parses "key=value,key=value" into a CpuTuning (the CLI's --cpu-tuning): isa=NAME,
/// repack=default|none|all, huge_pages=0|1, prefetch=BYTES, streams=N. Unknown keys or values
/// are kInvalidArgument naming them; "" is the defaults.
Result<CpuTuning> parse_cpu_tuning(std::string_view spec);

/// Test and debugging knobs of the OpenCL unit.
struct OpenclTuning {
  /// Only devices whose name, vendor or platform contains this text; also admits non-GPU
  /// devices (PoCL's "pthread" CPU device) where only GPUs would be taken. Empty: any.
  std::string device_filter;
  /// Op names the OpenCL unit reports unsupported (e.g. "Rope"), so the scheduler places them
  /// elsewhere. An unknown name fails build().
  std::vector<std::string> disabled_ops;
  /// Device memory the unit may use, in bytes (0: the device's own).
  uint64_t memory_limit_bytes = 0;
};

/// Tuning of the units a Model runs on (ModelBuilder::with_tuning).
struct BackendTuning {
  CpuTuning cpu;
  OpenclTuning opencl;
  /// Token counts every step is padded to, as a unit with static shapes needs (e.g. {1, 128});
  /// prompts then prefill in chunks of the largest. Empty: what the units ask for (NPUs).
  /// Each must be in [1, 65536], else build() fails.
  std::vector<int32_t> static_batch_tokens;
};

/// Images a vision-language model has encoded since it was built (`geniex bench --image`).
struct ImageStats {
  int64_t images = 0;      ///< images encoded
  int64_t views = 0;       ///< encoder runs: tiles plus thumbnail, or 1 for an untiled image
  double encode_ms = 0.0;  ///< decoding, preprocessing and encoding, all images together
  /// The part of encode_ms spent decoding and preprocessing, before the request starts; the
  /// encoder itself runs when the prefill reaches an image, so it counts in that generation's
  /// Timings::prompt_ms too.
  double prepare_ms = 0.0;
};

/// How embed() turns a text's per-token hidden states into one vector.
enum class Pooling {
  kModel,  ///< as the GGUF declares (`<arch>.pooling_type`); mean when it declares none
  kNone,   ///< no pooling: every token's vector, one after another (n_tokens x n_embd)
  kMean,   ///< the mean over the text's tokens
  kCls,    ///< the first token's (BERT's [CLS])
  kLast,   ///< the last token's
};
/// "model", "none", "mean", "cls", "last" -> the pooling; anything else is kInvalidArgument.
Result<Pooling> parse_pooling(std::string_view name);
/// "model", "none", "mean", "cls", "last".
std::string_view pooling_name(Pooling p);

/// Settings of one embed() call.
struct EmbeddingConfig {
  Pooling pooling = Pooling::kModel;
  /// Scale each vector (with kNone: each token's) to unit L2 length.
  bool normalize = true;
  /// embed(texts) only: add the vocabulary's automatic specials (BOS, BERT's [CLS] ... [SEP]).
  bool add_special = true;
  /// > 0: keep only the first `dimensions` values of each vector (Matryoshka truncation),
  /// renormalised when normalize is on. Must not exceed info().n_embd.
  int32_t dimensions = 0;
};

/// The vectors of one embed() call, one per input in order.
struct Embeddings {
  std::vector<std::vector<float>> vectors;
  std::vector<int32_t> n_tokens;     ///< tokens of each input
  int32_t n_dims = 0;                ///< values per vector (per token with Pooling::kNone)
  Pooling pooling = Pooling::kMean;  ///< the pooling applied (never kModel)
  int32_t prompt_tokens = 0;         ///< tokens of every input together
  double ms = 0.0;                   ///< wall time of the forward passes
};

class ModelBuilder;

/// A loaded model with one conversation context. Movable, not copyable.
class Model {
 public:
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  /// Completes raw text (no chat template). The prompt is tokenized with config.add_special /
  /// parse_special. Errors: invalid sampling settings, a prompt longer than the context.
  Result<Generation> generate(std::string_view prompt, const GenerationConfig& config = {},
                              const TokenCallback& on_token = {});
  /// Completes from token ids.
  Result<Generation> generate(std::span<const int32_t> prompt_tokens,
                              const GenerationConfig& config = {},
                              const TokenCallback& on_token = {});
  /// Completes raw text with images (a vision-language model). Image i goes where the prompt
  /// has its i-th info().image_marker; images beyond the markers go before the text. Errors:
  /// more markers than images, an undecodable or oversized image, a text-only model
  /// (kInvalidArgument), more image tokens than the context holds (kOutOfRange).
  Result<Generation> generate(std::string_view prompt, std::span<const Image> images,
                              const GenerationConfig& config = {},
                              const TokenCallback& on_token = {});
  /// Applies the model's chat template (with the generation prompt) and generates the reply.
  /// The cached context is reused where the new prompt starts with it (multi-turn chat costs
  /// only the new tokens).
  Result<Generation> chat(std::span<const ChatMessage> messages,
                          const GenerationConfig& config = {}, const TokenCallback& on_token = {});
  /// chat() with tools, template variables and a reply prefix (see ChatTemplateOptions).
  Result<Generation> chat(std::span<const ChatMessage> messages, const ChatTemplateOptions& options,
                          const GenerationConfig& config = {}, const TokenCallback& on_token = {});

  /// The tokens chat() feeds the model for `messages` (template with the generation prompt,
  /// special tokens parsed, BOS added when the template does not write it).
  [[nodiscard]] Result<std::vector<int32_t>> chat_tokens(
      std::span<const ChatMessage> messages, const ChatTemplateOptions& options = {}) const;
  /// The chat template's rendering of `messages` (with options.reply_prefix appended when
  /// add_generation_prompt). Errors: a bad role, tools or extra_context that are not a JSON
  /// array / object, the template's own raise_exception (kInvalidArgument).
  [[nodiscard]] Result<std::string> apply_chat_template(std::span<const ChatMessage> messages,
                                                        bool add_generation_prompt = true) const;
  [[nodiscard]] Result<std::string> apply_chat_template(std::span<const ChatMessage> messages,
                                                        bool add_generation_prompt,
                                                        const ChatTemplateOptions& options) const;
  /// The chat template's source text ("" when the model has none).
  [[nodiscard]] const std::string& chat_template_source() const;
  [[nodiscard]] Result<std::vector<int32_t>> tokenize(std::string_view text,
                                                      bool add_special = true,
                                                      bool parse_special = false) const;
  [[nodiscard]] Result<std::string> detokenize(std::span<const int32_t> tokens) const;
  /// One token's text, special tokens spelled out ("<start_of_turn>"); "" for an unknown id.
  [[nodiscard]] std::string token_piece(int32_t token) const;
  /// Whether `token` ends generation (EOS, end-of-turn, ...).
  [[nodiscard]] bool is_end_of_generation(int32_t token) const;

  /// Logits of the positions first_row .. tokens.size()-1 of `tokens`, evaluated from an empty
  /// context: tokens.size() - first_row rows of n_vocab floats (rows before first_row are not
  /// computed through the output head). For perplexity and tests.
  Result<std::vector<float>> logits(std::span<const int32_t> tokens, int32_t first_row = 0);
  /// The same for raw text with images (special-token text parsed, BOS added unless the text
  /// starts with it; images placed as generate() places them). Rows are prompt positions after
  /// the image expansion.
  Result<std::vector<float>> logits(std::string_view prompt, std::span<const Image> images,
                                    int32_t first_row = 0);

  /// Embeds each text: the model's final hidden states (a decoder's final norm output, an
  /// encoder's last layer) pooled per text, normalised unless config.normalize is off. Inputs
  /// run batched (several texts per forward pass, each attending only to itself). Errors: an
  /// empty list or an empty input, an input longer than the context (kOutOfRange), bad config.
  /// Encoder-only models (bert) do nothing but this (and tokenize / detokenize).
  Result<Embeddings> embed(std::span<const std::string> texts, const EmbeddingConfig& config = {});
  /// The same from token ids.
  Result<Embeddings> embed(std::span<const std::vector<int32_t>> inputs,
                           const EmbeddingConfig& config = {});

  /// Forgets the cached context.
  void reset();

  /// Writes the cached context (tokens and KV) to `path`, to resume later or in another process
  /// (a versioned file with a checksum).
  Status save_state(const std::string& path);
  /// Replaces the cached context with a saved one; the next generate() whose prompt starts with
  /// its tokens reuses them. kDataLoss for a corrupt or truncated file, kInvalidArgument for a
  /// file from another model, KV type or version.
  Status load_state(const std::string& path);
  /// The tokens of the cached context.
  [[nodiscard]] std::vector<int32_t> cached_tokens() const;
  [[nodiscard]] KvStats kv_stats() const;
  [[nodiscard]] EngineStats engine_stats() const;
  /// Zero for a text model.
  [[nodiscard]] ImageStats image_stats() const;

  /// The capability table of every unit for this model's ops and where each stage of a decode
  /// step and of a prefill step runs, with the reasons units were passed over.
  [[nodiscard]] std::string explain_placement() const;
  /// Per placement segment: runs, time and boundary copies (`geniex bench --profile`).
  [[nodiscard]] std::vector<StageTiming> stage_timings() const;
  void reset_stage_timings();

  [[nodiscard]] const ModelInfo& info() const;

 private:
  friend class ModelBuilder;
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Configures and loads a Model.
class ModelBuilder {
 public:
  /// The most worker threads a model takes: above the hardware threads of the largest machines
  /// (two 192-core sockets have 768), far below a count that would only exhaust the process.
  static constexpr int32_t kMaxThreads = 1024;

  explicit ModelBuilder(std::string path);

  ModelBuilder& with_device(Device device);
  /// How many decoder layers may run on the preferred accelerator (the NPU or GPU with_device
  /// chooses; default -1: no limit, every stage goes to the first unit that can run it). With
  /// n >= 0, llama.cpp's -ngl order: the LAST n layers and, when n >= 1, the output head may
  /// leave the CPU; the embedding and the first layers run on the CPU. 0 keeps the whole model
  /// on the CPU; n above the layer count means every layer. A vision encoder is not limited.
  /// build() refuses n < -1.
  ModelBuilder& with_offload_layers(int32_t n);
  /// Context window in tokens (default 4096, capped at the model's training context; 0 = the
  /// model's training context).
  ModelBuilder& with_context_size(int32_t n_ctx);
  /// Worker threads (default 0: the CPUs this process may use); build() refuses values outside
  /// [0, kMaxThreads], and fails with kResourceExhausted when the system will not start them.
  ModelBuilder& with_threads(int32_t n_threads);
  /// Largest number of prompt tokens evaluated in one step (default 512).
  ModelBuilder& with_batch_size(int32_t n_batch);
  /// Element type of the KV cache (default F16).
  ModelBuilder& with_kv_cache_type(KvCacheType type);
  /// Most bytes of KV kept in memory (default 0: no limit); beyond it the least recently used
  /// blocks spill to a file in `spill_dir` (default $TMPDIR or /tmp) and come back when needed.
  ModelBuilder& with_kv_budget(int64_t bytes, std::string spill_dir = {});
  /// Sequences that generate at once (default 4). Concurrent generate()/chat() calls from
  /// different threads are batched: every decode step runs all of them in one forward pass.
  /// Calls beyond this wait for a free sequence. Each sequence may hold the whole context.
  ModelBuilder& with_max_sequences(int32_t n);
  /// Policy when a generation fills the context (default kStop).
  ModelBuilder& with_context_overflow(ContextOverflow policy, int32_t n_keep = 0);
  /// Receives log lines (placement decisions, fallbacks). Default: none.
  ModelBuilder& with_log(std::function<void(std::string_view)> log);
  /// Folder searched for NPU plugins (libgeniex_npu_*.so). Default: $GENIEX_PLUGIN_DIR, else
  /// `plugins` beside or above the running executable's folder.
  ModelBuilder& with_plugin_dir(std::string dir);
  /// Configuration string handed to the NPU plugins when they are created: `key=value` items
  /// separated by ';', keys defined by the plugin (the reference plugin: `memory=64M`,
  /// `fail_compile=1`, `fail_execute_at=N`; the QNN plugin: src/backends/npu/qnn/README.md).
  /// An item goes to every plugin unless scoped with a plugin's name, `NAME:key=value` (`ref`,
  /// `qnn-htp`), which only that plugin receives. Default: empty.
  ModelBuilder& with_npu_config(std::string config);
  /// Bit-identical output whether a request runs alone or batched with others, and with or
  /// without a reused prefix (default off). Costs single-row speed for Q8_0/Q5_0/Q4_0 weights.
  /// The CPU kernels are shared by the process: once one model asks for it, every model in the
  /// process computes this way.
  ModelBuilder& with_deterministic(bool on = true);
  /// Tuning of the CPU kernels, the OpenCL unit and step shapes (default: BackendTuning{}, the
  /// measured defaults). For benchmarks, tests and debugging; see CpuTuning for which fields are
  /// process-wide.
  ModelBuilder& with_tuning(BackendTuning tuning);

  /// The mmproj GGUF (vision encoder + projector, `general.architecture = clip`) that makes this
  /// a vision-language model. build() fails when it does not fit the model (another embedding
  /// width, a projector this build does not run).
  ModelBuilder& with_mmproj(std::string path);

  /// Loads the model. Errors: missing/corrupt file, unknown architecture, missing tensors,
  /// unsupported weight types, memory exhausted — each with a message naming the cause.
  [[nodiscard]] Result<Model> build() const;

 private:
  /// The units and scheduler of `impl` (returns the load's warnings).
  Result<std::vector<std::string>> make_scheduler(Model::Impl& impl) const;
  /// build() for an encoder that only embeds (bert).
  Result<Model> build_encoder(std::unique_ptr<Model::Impl> impl) const;

  std::string path_;
  Device device_ = Device::automatic();
  int32_t n_ctx_ = 4096;
  int32_t n_threads_ = 0;
  int32_t n_batch_ = 512;
  KvCacheType kv_type_ = KvCacheType::kF16;
  int64_t kv_budget_ = 0;
  std::string spill_dir_;
  int32_t max_sequences_ = 4;
  ContextOverflow overflow_ = ContextOverflow::kStop;
  int32_t n_keep_ = 0;
  std::function<void(std::string_view)> log_;
  std::string plugin_dir_;
  std::string npu_config_;
  int32_t offload_layers_ = -1;
  std::string mmproj_;
  bool deterministic_ = false;
  BackendTuning tuning_;
};

}  // namespace geniex
