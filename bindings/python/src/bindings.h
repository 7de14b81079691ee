// The parts of geniex._core, each bound in its own file.
#pragma once

#include <nanobind/nanobind.h>

#include "geniex/geniex.hpp"

namespace geniex::python {

/// Device, CancelToken, GenerationConfig, Generation and the other value types.
void bind_types(nanobind::module_& m);
/// `config` (or the defaults when null) with keyword overrides set by field name; an unknown
/// name raises TypeError.
GenerationConfig merged_config(const GenerationConfig* config, const nanobind::kwargs& overrides);
/// ModelBuilder, Model, TokenStream.
void bind_model(nanobind::module_& m);

}  // namespace geniex::python
