// Conversion of chat messages, content parts and images from Python objects.
#include "chat_messages.h"

#include <nanobind/stl/string.h>

#include <string>

#include "status_error.h"

namespace nb = nanobind;

namespace geniex::python {
namespace {

// item[key] for a mapping, item.key for an object; None when absent.
nb::object field(nb::handle item, const char* key) {
  if (PyMapping_Check(item.ptr()) != 0 && !nb::isinstance<nb::str>(item)) {
    if (PyMapping_HasKeyString(item.ptr(), key) == 0) return nb::none();
    return item[key];
  }
  return nb::hasattr(item, key) ? nb::getattr(item, key) : nb::none();
}

Image to_image(nb::handle obj, const std::string& where) {
  if (nb::isinstance<nb::bytes>(obj) || nb::isinstance<nb::bytearray>(obj)) {
    nb::bytes b(obj);
    const auto* p = static_cast<const uint8_t*>(b.data());
    return Image::from_bytes(std::vector<uint8_t>(p, p + b.size()));
  }
  if (nb::isinstance<nb::str>(obj) || nb::hasattr(obj, "__fspath__")) {
    nb::object path = nb::module_::import_("os").attr("fspath")(obj);
    return Image::from_file(nb::cast<std::string>(path));
  }
  throw StatusError(invalid_argument(where + ": an image is a path or the encoded file's bytes"));
}

ContentPart to_part(nb::handle part, const std::string& where) {
  if (nb::isinstance<nb::str>(part)) return ContentPart::text_part(nb::cast<std::string>(part));
  nb::object type = field(part, "type");
  const std::string t = type.is_none() ? "" : nb::cast<std::string>(nb::str(type));
  if (t == "text") {
    nb::object text = field(part, "text");
    if (text.is_none()) throw StatusError(invalid_argument(where + ": a text part needs 'text'"));
    return ContentPart::text_part(nb::cast<std::string>(text));
  }
  if (t == "image") {
    for (const char* key : {"path", "image", "url"}) {
      nb::object v = field(part, key);
      if (!v.is_none()) return ContentPart::image_part(to_image(v, where));
    }
    throw StatusError(invalid_argument(where + ": an image part needs 'path' or 'image'"));
  }
  throw StatusError(invalid_argument(
      where + ": a content part's type must be 'text' or 'image', got '" + t + "'"));
}

}  // namespace

std::vector<ChatMessage> to_messages(nb::handle messages) {
  if (nb::isinstance<nb::str>(messages)) {
    throw StatusError(
        invalid_argument("messages must be a list of {'role': ..., 'content': ...}, not a string"));
  }
  std::vector<ChatMessage> out;
  size_t i = 0;
  for (nb::handle item : messages) {
    const std::string where = "message " + std::to_string(i++);
    nb::object role = field(item, "role");
    if (role.is_none() || !nb::isinstance<nb::str>(role)) {
      throw StatusError(invalid_argument(where + " has no 'role' string"));
    }
    ChatMessage msg;
    msg.role = nb::cast<std::string>(role);
    nb::object content = field(item, "content");
    if (nb::isinstance<nb::str>(content)) {
      msg.content = nb::cast<std::string>(content);
    } else if (!content.is_none()) {
      for (nb::handle part : content) msg.parts.push_back(to_part(part, where));
      if (msg.parts.empty()) msg.parts.push_back(ContentPart::text_part(""));
    }
    nb::object calls = field(item, "tool_calls");
    if (!calls.is_none()) {
      for (nb::handle call : calls) {
        nb::object fn = field(call, "function");
        nb::object name = fn.is_none() ? nb::none() : field(fn, "name");
        if (name.is_none() || !nb::isinstance<nb::str>(name)) {
          throw StatusError(invalid_argument(where + ": a tool call needs function.name"));
        }
        ToolCall tc;
        tc.name = nb::cast<std::string>(name);
        nb::object id = field(call, "id");
        if (!id.is_none()) tc.id = nb::cast<std::string>(nb::str(id));
        nb::object args = field(fn, "arguments");
        if (nb::isinstance<nb::str>(args)) {
          tc.arguments = nb::cast<std::string>(args);
        } else if (!args.is_none()) {
          tc.arguments = json_text(args);
        } else {
          tc.arguments = "{}";
        }
        msg.tool_calls.push_back(std::move(tc));
      }
    }
    for (auto [key, dst] : {std::pair{"tool_call_id", &msg.tool_call_id}, {"name", &msg.name}}) {
      nb::object v = field(item, key);
      if (!v.is_none()) *dst = nb::cast<std::string>(nb::str(v));
    }
    out.push_back(std::move(msg));
  }
  return out;
}

std::string json_text(nb::handle value) {
  nb::object dumps = nb::module_::import_("json").attr("dumps");
  return nb::cast<std::string>(dumps(value, nb::arg("ensure_ascii") = false));
}

std::vector<Image> to_images(nb::handle images) {
  std::vector<Image> out;
  if (images.is_none()) return out;
  size_t i = 0;
  for (nb::handle img : images) out.push_back(to_image(img, "image " + std::to_string(i++)));
  return out;
}

}  // namespace geniex::python
