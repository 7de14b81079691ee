// The parts of geniex._core, each bound in its own file.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>

#include "geniex/geniex.hpp"

namespace geniex::python {

/// geniex.CancelToken: owns a C++ token that generation threads may share without the GIL (a
/// shared_ptr to a Python-owned object would take the GIL when a worker thread drops it).
struct PyCancelToken {
  std::shared_ptr<CancelToken> token = std::make_shared<CancelToken>();
};

/// Device, CancelToken, GenerationConfig, Generation and the other value types.
void bind_types(nanobind::module_& m);
/// `config` (or the defaults when null) with keyword overrides set by field name; an unknown
/// name raises TypeError.
GenerationConfig merged_config(const GenerationConfig* config, const nanobind::kwargs& overrides);
/// ModelBuilder, Model, TokenStream.
void bind_model(nanobind::module_& m);

}  // namespace geniex::python
