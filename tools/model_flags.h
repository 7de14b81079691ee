// Model flags shared by run and chat (-m, --device, -c, -t, -b, KV, state files), checked before
// the model loads so a bad value is a usage error that costs no load time.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "flag_compat.h"
#include "geniex/geniex.hpp"
#include "kv_flags.h"

namespace geniex::cli {

struct ModelOptions {
  std::string model;
  std::string device = "auto";
  int32_t ctx = 4096;  ///< 0 = the model's training context
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

/// Which default model a command wants when -m is not given.
enum class DefaultModel { kText, kChat };

struct PreparedModel {
  std::string path;
  ModelBuilder builder;
};

/// A builder for the model named by `o` (or the default), every flag checked; nothing loaded.
/// kInvalidArgument for a bad flag value, kNotFound for a missing model file.
Result<PreparedModel> prepare_model(const ModelOptions& o, DefaultModel which);

/// Builds the model `prepare_model` described, restores --load-state and prints
/// --explain-placement. Errors name the model file.
Result<Model> load_model(PreparedModel& p, const ModelOptions& o);

/// A one-line stderr note when chat uses a template the file does not carry (a base model).
void note_chat_template(const Model& m);

}  // namespace geniex::cli
