#include "server/request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

namespace geniex::server {
namespace {

/// Reads optional typed fields of one JSON object; the first error sticks and later reads are
/// no-ops, so a parser reads every field and checks `error` once.
class Fields {
 public:
  explicit Fields(const Json& obj) : obj_(obj) {}

  std::optional<ApiError> error;

  /// The field, or nullptr when absent or JSON null (OpenAI treats null as "not given").
  const Json* get(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<double> number(const char* name, double lo, double hi) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_number()) {
      error = invalid_type(name, "a number");
      return std::nullopt;
    }
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) {
      error = invalid_value(
          name, "expected a value in [" + fmt(lo) + ", " + fmt(hi) + "], got " + v->dump() + ".");
      return std::nullopt;
    }
    return d;
  }

  std::optional<int64_t> integer(const char* name, int64_t lo, int64_t hi) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_number_integer()) {
      error = invalid_type(name, "an integer");
      return std::nullopt;
    }
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      error = invalid_value(name, "expected a value <= " + std::to_string(hi) + ".");
      return std::nullopt;
    }
    const int64_t i = v->get<int64_t>();
    if (i < lo || i > hi) {
      error = invalid_value(name, "expected a value in [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "], got " + std::to_string(i) + ".");
      return std::nullopt;
    }
    return i;
  }

  std::optional<bool> boolean(const char* name) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_boolean()) {
      error = invalid_type(name, "a boolean");
      return std::nullopt;
    }
    return v->get<bool>();
  }

  std::optional<std::string> string(const char* name) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_string()) {
      error = invalid_type(name, "a string");
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  void fail(ApiError e) {
    if (!error) error = std::move(e);
  }

 private:
  static std::string fmt(double d) {
    std::string s = std::to_string(d);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  const Json& obj_;
};

ApiResult<Json> parse_object(std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return malformed_body("invalid JSON");
  if (!j.is_object()) return malformed_body("the top-level value is not an object");
  return j;
}

/// Fields shared by both endpoints: model, sampling, stops, stream, n, seed, extensions.
void parse_common(Fields& f, CompletionRequest& r, const GenerationConfig& defaults) {
  GenerationConfig& c = r.config;
  // The server's defaults (geniex serve's sampling flags); the request's own fields win. Only
  // the plain settings: callbacks and filters are the handler's.
  c = GenerationConfig();
  c.max_tokens = defaults.max_tokens < 0 ? -1 : defaults.max_tokens;
  c.temperature = defaults.temperature;
  c.top_k = defaults.top_k;
  c.top_p = defaults.top_p;
  c.min_p = defaults.min_p;
  c.repetition_penalty = defaults.repetition_penalty;
  c.presence_penalty = defaults.presence_penalty;
  c.frequency_penalty = defaults.frequency_penalty;
  c.penalty_last_n = defaults.penalty_last_n;
  c.seed = defaults.seed;
  c.stop = defaults.stop;
  c.ignore_eos = defaults.ignore_eos;
  // One model is served: any name (or none) means it, as with llama-server.
  if (auto m = f.string("model")) r.model = *m;
  if (auto t = f.number("temperature", 0.0, 2.0)) c.temperature = static_cast<float>(*t);
  if (auto p = f.number("top_p", 0.0, 1.0)) {
    // Our sampler needs top_p > 0; OpenAI's 0 keeps just the most likely token, as does this.
    c.top_p = *p > 0.0 ? static_cast<float>(*p) : 1e-6f;
  }
  if (auto p = f.number("presence_penalty", -2.0, 2.0)) c.presence_penalty = static_cast<float>(*p);
  if (auto p = f.number("frequency_penalty", -2.0, 2.0)) {
    c.frequency_penalty = static_cast<float>(*p);
  }
  // llama.cpp-style extensions, accepted because many OpenAI-compatible clients send them.
  if (auto k = f.integer("top_k", 0, 1 << 30)) c.top_k = static_cast<int32_t>(*k);
  if (auto p = f.number("min_p", 0.0, 0.999)) c.min_p = static_cast<float>(*p);
  if (auto p = f.number("repetition_penalty", 0.01, 10.0)) {
    c.repetition_penalty = static_cast<float>(*p);
  }
  // llama-server's names for the settings that geniex serve also takes as flags.
  if (auto p = f.number("repeat_penalty", 0.01, 10.0))
    c.repetition_penalty = static_cast<float>(*p);
  if (auto n = f.integer("repeat_last_n", -1, 1 << 30)) c.penalty_last_n = static_cast<int32_t>(*n);
  if (auto b = f.boolean("ignore_eos")) c.ignore_eos = *b;
  if (auto s = f.integer("seed", INT64_MIN, INT64_MAX)) c.seed = static_cast<uint64_t>(*s);
  if (auto n = f.integer("n", 1, 128); n && *n != 1) {
    f.fail(unsupported("n", "only n = 1 is supported (one choice per request); send " +
                                std::to_string(*n) + " requests instead."));
  }
  if (const Json* stop = f.get("stop"); stop && !f.error) {
    c.stop.clear();  // the request's list replaces the server's
    if (stop->is_string()) {
      if (!stop->get<std::string>().empty()) c.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > 4) f.fail(invalid_value("stop", "at most 4 stop sequences."));
      for (size_t i = 0; i < stop->size() && !f.error; ++i) {
        const Json& s = (*stop)[i];
        if (!s.is_string()) {
          f.fail(invalid_type("stop[" + std::to_string(i) + "]", "a string"));
        } else if (!s.get<std::string>().empty()) {
          c.stop.push_back(s.get<std::string>());
        }
      }
    } else {
      f.fail(invalid_type("stop", "a string or an array of strings"));
    }
  }
  if (auto s = f.boolean("stream")) r.stream = *s;
  if (const Json* so = f.get("stream_options"); so && !f.error) {
    if (!so->is_object()) {
      f.fail(invalid_type("stream_options", "an object"));
    } else if (!r.stream) {
      f.fail(invalid_value("stream_options", "only allowed when 'stream' is true."));
    } else {
      auto it = so->find("include_usage");
      if (it != so->end() && !it->is_null()) {
        if (!it->is_boolean()) {
          f.fail(invalid_type("stream_options.include_usage", "a boolean"));
        } else {
          r.include_usage = it->get<bool>();
        }
      }
    }
  }
  if (const Json* lb = f.get("logit_bias"); lb && !f.error) {
    if (!lb->is_object()) {
      f.fail(invalid_type("logit_bias", "an object"));
    } else if (!lb->empty()) {
      f.fail(unsupported("logit_bias", "logit_bias is not supported by this server."));
    }
  }
}

/// A message's content: the joined text, and (when it has images) its parts in order.
struct MessageContent {
  std::string text;
  std::vector<ContentPart> parts;
  int n_images = 0;
};

bool lower_equals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Whether `path` is `dir` or below it (both canonical, absolute).
bool is_under(const std::string& path, const std::string& dir) {
  if (dir == "/") return path.starts_with("/");
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

/// One image_url part's URL as an Image, or the 400 that explains why not.
ApiResult<Image> image_from_url(const std::string& url, const std::string& at,
                                const ImageOptions& opts) {
  const std::string param = at + ".image_url.url";
  const std::string_view u = url;
  if (lower_equals(u.substr(0, std::min<size_t>(u.size(), 5)), "data:")) {
    const size_t comma = u.find(',');
    if (comma == std::string_view::npos) {
      return invalid_value(param, "a data: URL needs a ',' before its data.");
    }
    const std::string_view head = u.substr(5, comma - 5);  // "image/png;base64"
    static constexpr std::string_view kTypes[] = {"image/jpeg", "image/jpg",  "image/png",
                                                  "image/gif",  "image/webp", "image/bmp"};
    const size_t semi = head.find(';');
    const std::string_view media = head.substr(0, semi);
    bool known = false;
    for (std::string_view t : kTypes) known = known || lower_equals(media, t);
    if (!known) {
      return invalid_value(param, "unsupported image type '" + std::string(media) +
                                      "' in the data: URL; expected image/jpeg, image/png, "
                                      "image/gif, image/webp or image/bmp.");
    }
    if (semi == std::string_view::npos || !lower_equals(head.substr(semi + 1), "base64")) {
      return invalid_value(
          param, "the data: URL must be base64 (data:" + std::string(media) + ";base64,...).");
    }
    size_t bad = 0;
    auto bytes = decode_base64(u.substr(comma + 1), &bad);
    if (!bytes) {
      return invalid_value(param, "invalid base64 in the image's data: URL at data offset " +
                                      std::to_string(bad) + ".");
    }
    if (bytes->empty()) return invalid_value(param, "the image's data: URL holds no data.");
    return Image::from_bytes(std::move(*bytes));
  }
  if (lower_equals(u.substr(0, std::min<size_t>(u.size(), 7)), "http://") ||
      lower_equals(u.substr(0, std::min<size_t>(u.size(), 8)), "https://")) {
    return invalid_value(param,
                         "remote images are not fetched (no network at run time); send a data: "
                         "URL (data:image/png;base64,...).");
  }
  if (lower_equals(u.substr(0, std::min<size_t>(u.size(), 7)), "file://")) {
    std::string_view rest = u.substr(7);
    if (lower_equals(rest.substr(0, std::min<size_t>(rest.size(), 9)), "localhost")) {
      rest.remove_prefix(9);
    }
    if (!rest.starts_with('/')) {
      return invalid_value(param, "a file URL needs an absolute path (file:///dir/image.png).");
    }
    std::string path;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == '%' && i + 2 < rest.size() && hex_value(rest[i + 1]) >= 0 &&
          hex_value(rest[i + 2]) >= 0) {
        path += static_cast<char>(hex_value(rest[i + 1]) * 16 + hex_value(rest[i + 2]));
        i += 2;
      } else if (rest[i] == '?' || rest[i] == '#') {
        break;
      } else {
        path += rest[i];
      }
    }
    const ApiError outside =
        invalid_value(param, "file URL outside the allowed image directories.");
    if (opts.allowed_dirs.empty()) {
      return invalid_value(param,
                           "file URLs are not accepted by this server (start it with "
                           "--allow-image-dir DIR); send a data: URL.");
    }
    if (path.find('\0') != std::string::npos) return outside;
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) {
      // Say "not found" only inside an allowed directory: outside, existence is not revealed.
      const std::string lexical = std::filesystem::path(path).lexically_normal().string();
      for (const std::string& d : opts.allowed_dirs) {
        if (is_under(lexical, d)) return invalid_value(param, "no image file at " + path + ".");
      }
      return outside;
    }
    const std::string canonical = real;
    std::free(real);
    for (const std::string& d : opts.allowed_dirs) {
      if (is_under(canonical, d)) return Image::from_file(canonical);
    }
    return outside;
  }
  return invalid_value(param, "expected a data: URL (data:image/png;base64,...)" +
                                  std::string(opts.allowed_dirs.empty() ? "" : " or a file: URL") +
                                  ".");
}

/// One message's content: a string, or an array of {"type": "text", "text": ...} and
/// {"type": "image_url", "image_url": {"url": ...}} parts (text parts joined with newlines).
std::optional<MessageContent> message_content(const Json& content, const std::string& where,
                                              Fields& f, const ImageOptions& opts, int& n_images) {
  MessageContent out;
  if (content.is_null()) return out;
  if (content.is_string()) {
    out.text = content.get<std::string>();
    return out;
  }
  if (!content.is_array()) {
    f.fail(invalid_type(where, "a string or an array of content parts"));
    return std::nullopt;
  }
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) {
      f.fail(invalid_type(at, "an object"));
      return std::nullopt;
    }
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      f.fail(missing_param(at + ".type"));
      return std::nullopt;
    }
    if (*type == "image_url") {
      auto iu = part.find("image_url");
      if (iu == part.end() || iu->is_null()) {
        f.fail(missing_param(at + ".image_url"));
        return std::nullopt;
      }
      std::string url;
      if (iu->is_string()) {
        url = iu->get<std::string>();
      } else if (iu->is_object()) {
        auto u = iu->find("url");
        if (u == iu->end() || u->is_null()) {
          f.fail(missing_param(at + ".image_url.url"));
          return std::nullopt;
        }
        if (!u->is_string()) {
          f.fail(invalid_type(at + ".image_url.url", "a string"));
          return std::nullopt;
        }
        auto d = iu->find("detail");  // "auto", "low", "high": the encoder has one resolution
        if (d != iu->end() && !d->is_null() && !d->is_string()) {
          f.fail(invalid_type(at + ".image_url.detail", "a string"));
          return std::nullopt;
        }
        url = u->get<std::string>();
      } else {
        f.fail(invalid_type(at + ".image_url", "an object {\"url\": ...} or a string"));
        return std::nullopt;
      }
      if (++n_images > opts.max_images) {
        f.fail(invalid_value(
            at, "at most " + std::to_string(opts.max_images) + " images per request."));
        return std::nullopt;
      }
      auto img = image_from_url(url, at, opts);
      if (auto* e = std::get_if<ApiError>(&img)) {
        f.fail(std::move(*e));
        return std::nullopt;
      }
      out.parts.push_back(ContentPart::image_part(std::move(std::get<Image>(img))));
      ++out.n_images;
      continue;
    }
    if (*type != "text") {
      f.fail(unsupported(at + ".type", "content parts of type '" + type->get<std::string>() +
                                           "' are not supported; expected 'text' or "
                                           "'image_url'."));
      return std::nullopt;
    }
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) {
      f.fail(invalid_type(at + ".text", "a string"));
      return std::nullopt;
    }
    if (!out.text.empty()) out.text += '\n';
    out.text += t->get<std::string>();
    out.parts.push_back(ContentPart::text_part(t->get<std::string>()));
  }
  // Text only: the joined text, as before images existed (parts stay empty).
  if (out.n_images == 0) out.parts.clear();
  return out;
}

/// An assistant message's `tool_calls`: [{"id", "type": "function", "function": {"name",
/// "arguments" (JSON text)}}]. Their ids go to `ids` (tool messages must answer one).
bool parse_tool_calls(const Json& m, const std::string& at, Fields& f, ChatMessage& msg,
                      std::vector<std::string>& ids) {
  auto calls = m.find("tool_calls");
  if (calls == m.end() || calls->is_null()) return true;
  if (!calls->is_array()) {
    f.fail(invalid_type(at + ".tool_calls", "an array"));
    return false;
  }
  for (size_t k = 0; k < calls->size(); ++k) {
    const Json& c = (*calls)[k];
    const std::string ct = at + ".tool_calls[" + std::to_string(k) + "]";
    if (!c.is_object()) {
      f.fail(invalid_type(ct, "an object"));
      return false;
    }
    auto id = c.find("id");
    auto fn = c.find("function");
    if (id == c.end() || !id->is_string()) {
      f.fail(missing_param(ct + ".id"));
      return false;
    }
    if (fn == c.end() || !fn->is_object()) {
      f.fail(missing_param(ct + ".function"));
      return false;
    }
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) {
      f.fail(missing_param(ct + ".function.name"));
      return false;
    }
    ToolCall call{id->get<std::string>(), name->get<std::string>(), "{}"};
    auto args = fn->find("arguments");
    if (args != fn->end() && !args->is_null()) {
      if (args->is_string()) {
        call.arguments = args->get<std::string>();
      } else if (args->is_object()) {
        call.arguments = args->dump();  // some clients send the object itself
      } else {
        f.fail(invalid_type(ct + ".function.arguments", "a string of JSON"));
        return false;
      }
    }
    ids.push_back(call.id);
    msg.tool_calls.push_back(std::move(call));
  }
  return true;
}

void parse_messages(Fields& f, CompletionRequest& r, const ImageOptions& opts) {
  std::vector<std::string> call_ids;
  const Json* msgs = f.get("messages");
  if (!msgs) return f.fail(missing_param("messages"));
  if (!msgs->is_array()) return f.fail(invalid_type("messages", "an array"));
  if (msgs->empty()) {
    return f.fail(invalid_value("messages", "expected an array with at least 1 message."));
  }
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Json& m = (*msgs)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return f.fail(invalid_type(at, "an object"));
    auto role = m.find("role");
    if (role == m.end() || role->is_null()) return f.fail(missing_param(at + ".role"));
    if (!role->is_string()) return f.fail(invalid_type(at + ".role", "a string"));
    std::string rs = role->get<std::string>();
    if (rs == "developer") rs = "system";  // OpenAI's newer name for system instructions
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "tool") {
      return f.fail(invalid_value(at + ".role", "'" + role->get<std::string>() +
                                                    "' is not supported; expected one of "
                                                    "'system', 'developer', 'user', "
                                                    "'assistant', 'tool'."));
    }
    ChatMessage msg{rs, {}};
    if (rs == "assistant" && !parse_tool_calls(m, at, f, msg, call_ids)) return;
    auto content = m.find("content");
    // An assistant turn that only calls tools may have no content (null or absent).
    if (content == m.end() && msg.tool_calls.empty()) {
      return f.fail(missing_param(at + ".content"));
    }
    if (content != m.end()) {
      if (rs == "tool" && !content->is_string() && !content->is_array()) {
        return f.fail(invalid_type(at + ".content", "a string or an array of text parts"));
      }
      auto c = message_content(*content, at + ".content", f, opts, r.n_images);
      if (!c) return;
      if (rs == "tool" && c->n_images > 0) {
        return f.fail(invalid_value(at + ".content", "a tool message carries text only."));
      }
      msg.content = std::move(c->text);
      msg.parts = std::move(c->parts);
    }
    if (rs == "tool") {
      auto id = m.find("tool_call_id");
      if (id == m.end() || id->is_null()) return f.fail(missing_param(at + ".tool_call_id"));
      if (!id->is_string()) return f.fail(invalid_type(at + ".tool_call_id", "a string"));
      msg.tool_call_id = id->get<std::string>();
      if (std::find(call_ids.begin(), call_ids.end(), msg.tool_call_id) == call_ids.end()) {
        return f.fail(invalid_value(
            at + ".tool_call_id",
            "no earlier assistant message has a tool call with id '" + msg.tool_call_id + "'."));
      }
      if (auto n = m.find("name"); n != m.end() && n->is_string()) msg.name = n->get<std::string>();
    }
    r.messages.push_back(std::move(msg));
  }
}

}  // namespace

std::optional<std::vector<uint8_t>> decode_base64(std::string_view in, size_t* bad_at) {
  auto fail = [&](size_t at) -> std::optional<std::vector<uint8_t>> {
    if (bad_at) *bad_at = at;
    return std::nullopt;
  };
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  size_t pad = 0;
  while (pad < 2 && pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  const size_t n = in.size() - pad;  // data characters
  for (size_t i = 0; i < n; ++i) {
    if (value(in[i]) < 0) return fail(i);
  }
  if (in.size() % 4 != 0) return fail(in.size());  // truncated or badly padded
  std::vector<uint8_t> out;
  out.reserve(n / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    acc = (acc << 6) | static_cast<uint32_t>(value(in[i]));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  // Leftover bits of the last character must be zero (canonical encoding).
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return fail(n - 1);
  return out;
}

GenerationConfig request_defaults() {
  GenerationConfig c;
  c.max_tokens = -1;
  return c;
}

ApiResult<CompletionRequest> parse_chat_request(std::string_view body,
                                                const GenerationConfig& defaults,
                                                const ImageOptions& images) {
  auto parsed = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const Json& j = std::get<Json>(parsed);
  CompletionRequest r;
  r.endpoint = Endpoint::kChat;
  Fields f(j);
  parse_common(f, r, defaults);
  parse_messages(f, r, images);
  // max_completion_tokens is the newer name; either bounds the reply.
  auto mt = f.integer("max_completion_tokens", 1, INT64_MAX);
  if (!mt) mt = f.integer("max_tokens", 1, INT64_MAX);
  if (mt) r.config.max_tokens = static_cast<int32_t>(std::min(*mt, kMaxTokensCap));
  auto lp = f.boolean("logprobs");
  auto top = f.integer("top_logprobs", 0, 20);
  if (top && !lp.value_or(false)) {
    f.fail(invalid_value("top_logprobs", "'logprobs' must be true when 'top_logprobs' is set."));
  }
  if (lp.value_or(false)) r.logprobs = static_cast<int32_t>(top.value_or(0));
  if (const Json* rf = f.get("response_format"); rf && !f.error) {
    auto type = rf->is_object() ? rf->find("type") : rf->end();
    if (!rf->is_object()) {
      f.fail(invalid_type("response_format", "an object"));
    } else if (type == rf->end() || !type->is_string()) {
      f.fail(missing_param("response_format.type"));
    } else if (*type == "json_object") {
      r.json_object = true;
    } else if (*type == "json_schema") {
      // {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}, "strict": ...}}:
      // the output is held to the schema whatever `strict` says (it is always valid).
      const auto js = rf->find("json_schema");
      if (js == rf->end()) {
        f.fail(missing_param("response_format.json_schema"));
      } else if (!js->is_object()) {
        f.fail(invalid_type("response_format.json_schema", "an object"));
      } else if (const auto name = js->find("name");
                 name == js->end() || !name->is_string() || name->get<std::string>().empty()) {
        f.fail(missing_param("response_format.json_schema.name"));
      } else {
        const auto schema = js->find("schema");
        const std::string text = schema == js->end() ? "{}" : schema->dump();
        if (Status st = check_json_schema(text); !st.ok()) {
          f.fail(invalid_value("response_format.json_schema.schema", st.message()));
        } else {
          r.config.json_schema = text;
        }
      }
    } else if (*type != "text") {
      f.fail(invalid_value("response_format.type",
                           "expected 'text', 'json_object' or 'json_schema', got '" +
                               type->get<std::string>() + "'."));
    }
  }
  if (!f.error) {
    auto tools = parse_tools_request(j);
    if (auto* e = std::get_if<ApiError>(&tools)) {
      f.fail(std::move(*e));
    } else {
      r.tools = std::move(std::get<ToolsRequest>(tools));
    }
  }
  if (r.tools.active() && (r.json_object || !r.config.json_schema.empty())) {
    f.fail(invalid_value("response_format",
                         "a JSON response_format cannot be combined with tools; use "
                         "tool_choice 'none' or drop the response_format."));
  }
  if (const Json* fns = f.get("functions"); fns && !f.error && !fns->empty()) {
    f.fail(unsupported("functions",
                       "the deprecated 'functions' field is not supported; send 'tools'."));
  }
  if (f.error) return *f.error;
  return r;
}

ApiResult<CompletionRequest> parse_completion_request(std::string_view body,
                                                      const GenerationConfig& defaults) {
  auto parsed = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const Json& j = std::get<Json>(parsed);
  CompletionRequest r;
  r.endpoint = Endpoint::kCompletion;
  Fields f(j);
  parse_common(f, r, defaults);
  const Json* p = f.get("prompt");
  if (!f.error) {
    if (!p) {
      f.fail(missing_param("prompt"));
    } else if (p->is_string()) {
      r.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt = (*p)[0].get<std::string>();
    } else if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
      r.prompt_is_tokens = true;
      for (size_t i = 0; i < p->size() && !f.error; ++i) {
        const Json& t = (*p)[i];
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
          f.fail(invalid_type("prompt[" + std::to_string(i) + "]", "a token id (integer >= 0)"));
        } else {
          r.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
        }
      }
    } else if (p->is_array() && p->size() > 1) {
      f.fail(unsupported("prompt", "one prompt per request (a string, [string] or [token ids])."));
    } else {
      f.fail(invalid_type("prompt", "a string, an array of one string, or an array of token ids"));
    }
  }
  if (auto mt = f.integer("max_tokens", 0, INT64_MAX)) {
    r.config.max_tokens = static_cast<int32_t>(std::min(*mt, kMaxTokensCap));
  } else if (!f.get("max_tokens") && r.config.max_tokens < 0) {
    r.config.max_tokens = 16;  // no server default: the completions API's documented default
  }
  if (auto lp = f.integer("logprobs", 0, 5)) r.logprobs = static_cast<int32_t>(*lp);
  if (auto echo = f.boolean("echo"); echo && *echo) {
    f.fail(unsupported("echo", "echo is not supported by this server."));
  }
  if (auto best = f.integer("best_of", 1, 20); best && *best != 1) {
    f.fail(unsupported("best_of", "only best_of = 1 is supported."));
  }
  if (auto suffix = f.string("suffix"); suffix && !suffix->empty()) {
    f.fail(unsupported("suffix", "suffix is not supported by this server."));
  }
  if (f.error) return *f.error;
  return r;
}

}  // namespace geniex::server
