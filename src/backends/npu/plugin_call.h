// The C boundary of an NPU plugin, shared by our plugins (header only: a plugin links nothing of
// the engine's): a message copied into the caller's buffer, and a call wrapper that turns a
// Status into a geniex_npu_status + message exactly once and lets no exception out.
#pragma once

#include <cstddef>
#include <cstdio>
#include <new>
#include <string>

#include "core/status.h"
#include "geniex/npu_plugin.h"

namespace geniex::npu_plugin {

/// Copies `text` into the caller's `msg` buffer (truncated, NUL-terminated; nothing when NULL).
inline void set_msg(char* msg, size_t size, const std::string& text) {
  if (msg != nullptr && size > 0) std::snprintf(msg, size, "%s", text.c_str());
}

/// Runs `fn` (returning Status). A failure becomes `to_code(status)` with its message; bad_alloc
/// is OUT_OF_MEMORY; any other exception is INTERNAL, naming `plugin`.
template <typename ToCode, typename Fn>
geniex_npu_status guarded(char* msg, size_t size, const char* plugin, ToCode&& to_code, Fn&& fn) {
  try {
    Status s = fn();
    if (s.ok()) return GENIEX_NPU_OK;
    set_msg(msg, size, s.message());
    return to_code(s);
  } catch (const std::bad_alloc&) {
    set_msg(msg, size, "host memory exhausted");
    return GENIEX_NPU_OUT_OF_MEMORY;
  } catch (...) {
    set_msg(msg, size, std::string("unexpected exception inside ") + plugin);
    return GENIEX_NPU_INTERNAL;
  }
}

}  // namespace geniex::npu_plugin
