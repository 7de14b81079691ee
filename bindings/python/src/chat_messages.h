// Python chat messages and images -> the C++ API's ChatMessage / Image. Messages are mappings
// (or objects) with "role" and "content"; content is a str or a list of Hugging Face style parts
// ({"type": "text", "text": ...}, {"type": "image", "path"|"image": path or bytes}).
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex::python {

/// Raises InvalidArgument naming the message and field that is wrong. Assistant messages may
/// carry Hugging Face / OpenAI "tool_calls" ({"id"?, "function": {"name", "arguments": dict or
/// JSON str}}); tool messages "tool_call_id" and "name".
std::vector<ChatMessage> to_messages(nanobind::handle messages);
/// json.dumps(value, ensure_ascii=False).
std::string json_text(nanobind::handle value);
/// None -> none; else a list of paths (str / os.PathLike) or encoded bytes.
std::vector<Image> to_images(nanobind::handle images);

}  // namespace geniex::python
