// Model flags shared by run and chat (-m, --mmproj, --device, -c, -t, -b, KV, state files),
// checked before the model loads so a bad value is a usage error that costs no load time. Also
// the mmproj discovery and image helpers that run, chat, bench (and serve) share.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "flag_compat.h"
#include "geniex/geniex.hpp"
#include "kv_flags.h"

namespace geniex::cli {

struct ModelOptions {
  std::string model;
  std::string mmproj;      ///< --mmproj: vision encoder + projector of a vision-language model
  bool no_mmproj = false;  ///< --no-mmproj: no discovery of an mmproj-*.gguf beside the model
  std::string device = "auto";
  int32_t offload_layers = -1;  ///< --offload-layers (ModelBuilder::with_offload_layers)
  std::string npu_config;       ///< --npu-config (ModelBuilder::with_npu_config)
  int32_t ctx = 4096;           ///< 0 = the model's training context
  int32_t threads = 0;
  int32_t batch = 512;
  bool verbose = false;
  bool explain = false;  ///< print the capability table and placement before generating
  KvOptions kv;
  IgnoredFlags ignored;
  std::string cpu_tuning;  ///< --cpu-tuning (parse_cpu_tuning), for A/B runs
  std::string load_state;  ///< resume the context from this file before generating
  std::string save_state;  ///< write the context here afterwards
};

void add_model_flags(CLI::App* c, ModelOptions& o);

/// --offload-layers N (ModelBuilder::with_offload_layers; -1 = no limit), for every command with
/// --device.
CLI::Option* add_offload_option(CLI::App* c, int32_t& n);

/// --npu-config TEXT (ModelBuilder::with_npu_config: the NPU plugins' key=value;... string).
CLI::Option* add_npu_config_option(CLI::App* c, std::string& config);

/// Which default model a command wants when -m is not given.
enum class DefaultModel { kText, kChat };

struct PreparedModel {
  std::string path;
  ModelBuilder builder;
  std::string mmproj;  ///< the mmproj file the builder loads (given or discovered); "" = none
};

/// The --mmproj and --no-mmproj flags (for commands that do not take add_model_flags).
void add_mmproj_flags(CLI::App* c, std::string& mmproj, bool& no_mmproj);

/// The mmproj-*.gguf files in the folder of `model_path`, sorted by name.
std::vector<std::string> mmproj_candidates(const std::string& model_path);

/// The mmproj file for the model at `model_path`: `flag` when given (kNotFound when it does not
/// exist); otherwise, unless `no_discovery`, the one mmproj-*.gguf beside the model file that
/// fits it, noted on stderr as "<who>: using FILE ...". Discovery only looks when the model's
/// vocabulary has the "<image>" token, and only takes projectors (general.architecture "clip")
/// whose clip.vision.projection_dim is the model's embedding width; of several that fit,
/// mmproj-<model file name> wins, else a note names them and none is used. "" when there is
/// none. `flag` with `no_discovery` is kInvalidArgument.
Result<std::string> resolve_mmproj(const std::string& model_path, const std::string& flag,
                                   bool no_discovery, const char* who = "geniex");

/// Checks that an --image / /image file can be read (before the model loads): kNotFound or
/// kIoError naming the file.
Status check_image_file(const std::string& path);

/// The content of a user turn with images: text split at `marker` with image i at the i-th
/// marker, or every image before the text when it has none (as Model::generate places them).
/// kInvalidArgument when the text has markers but not one per image.
Result<std::vector<ContentPart>> image_message_parts(const std::string& text,
                                                     std::span<const Image> images,
                                                     const std::string& marker);

/// The error for images given to a model loaded without an mmproj, naming the remedy.
Status no_mmproj_error(const std::string& model_path, bool no_mmproj);

/// A builder for the model named by `o` (or the default), every flag checked; nothing loaded.
/// kInvalidArgument for a bad flag value, kNotFound for a missing model file.
Result<PreparedModel> prepare_model(const ModelOptions& o, DefaultModel which);

/// Builds the model `prepare_model` described, restores --load-state and prints
/// --explain-placement. Errors name the model file.
Result<Model> load_model(PreparedModel& p, const ModelOptions& o);

/// A one-line stderr note when chat uses a template the file does not carry (a base model).
void note_chat_template(const Model& m);

}  // namespace geniex::cli
