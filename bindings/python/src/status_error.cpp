// StatusError -> geniex.errors.from_status(code_name, message), raised as that exception.
#include "status_error.h"

#include <string_view>

namespace nb = nanobind;

namespace geniex::python {

void register_status_errors() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const std::string_view code = status_code_name(e.status().code());
      nb::object errors = nb::module_::import_("geniex.errors");
      nb::object exc = errors.attr("from_status")(nb::str(code.data(), code.size()),
                                                  to_str(e.status().message()));
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
}

nb::str to_str(std::string_view text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (s == nullptr) throw nb::python_error();
  return nb::steal<nb::str>(s);
}

}  // namespace geniex::python
