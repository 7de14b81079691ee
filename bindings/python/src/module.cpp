// geniex._core: the nanobind module over the public C++ API (include/geniex/geniex.hpp). The
// Python package (bindings/python/geniex) re-exports it; this file only assembles the parts.
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "generation_worker.h"
#include "status_error.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "GenieX native core (private: use the geniex package)";
  geniex::python::register_status_errors();
  geniex::python::bind_types(m);
  geniex::python::bind_model(m);
  m.def(
      "_shutdown",
      [] {
        nb::gil_scoped_release unlocked;
        geniex::python::GenerationWorker::cancel_and_wait_all();
      },
      "Cancels running generations and waits for their threads (registered with atexit).");
}
